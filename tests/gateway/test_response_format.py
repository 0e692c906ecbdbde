"""Native structured output: `ModelSettings.response_format` on the OpenAI wire, over HTTP."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from harness.agent.output import OutputSpec
from harness.core.messages import Message
from harness.gateway.model import ModelRequest, ModelSettings, ResponseFormat
from harness.gateway.providers.openai import OpenAIModel
from harness.testing.fake_openai import FakeOpenAIServer, FakeReply

from .conftest import collect, final_response

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}


def request(settings: ModelSettings) -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Paris?"),), settings=settings)


async def test_response_format_reaches_the_wire(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.add(FakeReply.text('{"city": "Paris", "celsius": 21}'))
    settings = ModelSettings(response_format=ResponseFormat(name="weather", schema=SCHEMA))
    response = await model.request(request(settings))
    assert response.message.content == '{"city": "Paris", "celsius": 21}'
    assert server.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "weather", "schema": SCHEMA, "strict": False},
    }


async def test_response_format_in_a_stream(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(FakeReply.text('{"city": "Paris", "celsius": 21}'))
    settings = ModelSettings(
        response_format=ResponseFormat(name="weather", schema=SCHEMA, strict=True)
    )
    response = final_response(await collect(model, request(settings)))
    assert response.message.content == '{"city": "Paris", "celsius": 21}'
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["response_format"]["json_schema"]["strict"] is True


async def test_no_response_format_unless_asked(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.add(FakeReply.text("sunny"))
    await model.request(request(ModelSettings()))
    assert "response_format" not in server.requests[0].body


async def test_extra_body_can_override_it(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(FakeReply.text("{}"))
    settings = ModelSettings(
        response_format=ResponseFormat(name="weather", schema=SCHEMA),
        extra_body={"response_format": {"type": "json_object"}},
    )
    await model.request(request(settings))
    assert server.requests[0].body["response_format"] == {"type": "json_object"}


async def test_an_output_spec_asks_for_its_own_schema(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    class Weather(BaseModel):
        model_config = ConfigDict(extra="forbid")
        city: str
        celsius: float

    spec = OutputSpec.from_type(Weather)
    server.add(FakeReply.text('{"city": "Paris", "celsius": 21}'))
    response = await model.request(request(ModelSettings(response_format=spec.response_format())))
    assert server.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather", "schema": Weather.model_json_schema(), "strict": True},
    }
    assert spec.extract(response.message.content or "").value == Weather(city="Paris", celsius=21)
