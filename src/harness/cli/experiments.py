"""`harness experiments list | report NAME | stop NAME --keep VARIANT`."""

from __future__ import annotations
