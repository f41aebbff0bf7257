"""`NamedTuple` as `typing` spells it, without loading `typing`.

`lnk-sandbox run` starts for every sandbox, and what it reads is kept in NamedTuples (the
layout, the grants in force, the policy). `typing` costs such a start about 2 ms to import, and
each class it makes about 0.1 ms more than `collections.namedtuple`, which makes the class
underneath. So a type checker sees `typing.NamedTuple` itself, and at run time the same class
statement makes the same namedtuple directly: its fields and their defaults from the class's
annotations, in order, and everything else the class defines (methods, properties, its
docstring) kept on it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    import collections

    _MADE_BY_NAMEDTUPLE = frozenset(("__module__", "__qualname__", "__annotations__"))

    class _NamedTupleMaker(type):
        """What `class Name(NamedTuple): ...` calls: a namedtuple in place of the class."""

        def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
            if "__annotations__" not in namespace and "__annotate__" in namespace:
                # Python 3.14 evaluates annotations lazily unless the module says otherwise.
                raise TypeError(f"{name}: its module needs `from __future__ import annotations`")
            annotations = dict(namespace.get("__annotations__", {}))
            fields = list(annotations)
            defaulted = [field for field in fields if field in namespace]
            if fields[len(fields) - len(defaulted) :] != defaulted:
                raise TypeError(f"{name}: a field without a default follows one with a default")
            made = collections.namedtuple(
                name,
                fields,
                defaults=[namespace[field] for field in defaulted],
                module=str(namespace["__module__"]),
            )
            made.__qualname__ = str(namespace["__qualname__"])
            made.__annotations__ = annotations
            for key, value in namespace.items():
                if key not in fields and key not in _MADE_BY_NAMEDTUPLE:
                    setattr(made, key, value)
            return made

    NamedTuple = type.__new__(_NamedTupleMaker, "NamedTuple", (), {})
