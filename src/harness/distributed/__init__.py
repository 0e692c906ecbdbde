"""Scale-out backends: the same agents, run by an engine built for many machines.

`harness.distributed.temporal` runs each harness run as a Temporal workflow (the extra
`harness[temporal]`). What only the runtime knows (settings, the tool registry, model
resolution, the store) reaches this layer through the small protocols of
`harness.distributed.host`, which `harness.runtime._temporal` implements.
"""
