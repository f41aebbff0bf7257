"""The base of every answer, and how an answer's JSON is checked.

Answers tolerate fields they don't know (a newer plugin may send more) and name a missing
required field (an older or broken plugin sent less than the contract asks).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from link_plugin.errors import ContractError
from link_plugin.model import Model


class Answer(Model):
    """A model crossing the contract: unknown fields are kept, never refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=False)


A = TypeVar("A", bound=BaseModel)


def describe_errors(error: ValidationError) -> str:
    """One line per problem, each naming the field it is about."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "(the answer)"
        if problem["type"] == "missing":
            lines.append(f"missing required field '{where}'")
        else:
            lines.append(f"field '{where}': {problem['msg']}")
    return "; ".join(lines)


def parse_answer(model: type[A], data: str | bytes | dict[str, Any], *, source: str) -> A:
    """Validate an answer, raising a ContractError that names `source` and the field."""
    if not isinstance(data, dict):
        text = data.decode() if isinstance(data, bytes) else data
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ContractError(
                f"{source} answered something that is not JSON ({exc.msg} at line {exc.lineno}).",
                "A plugin prints exactly one JSON object on stdout; anything else goes to stderr.",
            ) from exc
        if not isinstance(data, dict):
            raise ContractError(f"{source} answered JSON that is not an object.")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ContractError(f"{source} broke the contract: {describe_errors(exc)}.") from exc
