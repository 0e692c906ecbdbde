"""Running harness's agents on a distributed engine instead of the embedded runtime.

The layer sits between `harness.runtime` (which knows the settings, the tool registry and the
store sink, and hands them down by injection) and `harness.agent | harness.observability`.
`harness.distributed.temporal` is the one home of the `temporalio` SDK; importing this
package loads nothing of it. What a worker needs of the runtime is the `WorkerHost`
protocol of `harness.distributed.host`, which `harness.runtime._temporal` implements.
"""

from __future__ import annotations

__all__: list[str] = []
