"""The base of Link's models: each is built when first used, never merely when imported.

A program loads the models of every answer it might read and uses a few: Link Harness answering
`describe`, the supervisor reading its spec, a bridge. Building a model's validator is the dearest
part of defining it, so a `Model` builds it when the model first validates, dumps or describes
itself (pydantic's `defer_build`): what every field accepts is the same, only its moment changes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    model_config = ConfigDict(defer_build=True)
