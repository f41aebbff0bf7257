"""`link_plugin.records.NamedTuple` makes what `typing.NamedTuple` makes, from the same class
statement, without loading `typing`."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing

import pytest

from link_plugin.records import NamedTuple


class Folder(NamedTuple):
    """A folder and how it is shown."""

    path: str
    access: str = "ro"
    fd: int | None = None

    @property
    def writable(self) -> bool:
        return self.access == "rw"

    @classmethod
    def written(cls, path: str) -> Folder:
        return cls(path, "rw")

    def described(self) -> str:
        return f"{self.path} ({self.access})"


class TypingFolder(typing.NamedTuple):
    path: str
    access: str = "ro"
    fd: int | None = None


def test_a_record_is_the_namedtuple_typing_makes() -> None:
    made, expected = Folder("/a"), TypingFolder("/a")
    assert made._fields == expected._fields == ("path", "access", "fd")
    assert made._field_defaults == expected._field_defaults == {"access": "ro", "fd": None}
    assert made == expected == ("/a", "ro", None) and hash(made) == hash(expected)
    assert repr(made) == "Folder(path='/a', access='ro', fd=None)"
    assert made._replace(fd=3) == ("/a", "ro", 3) and type(made._replace(fd=3)) is Folder
    assert made._asdict() == expected._asdict()
    assert Folder.__annotations__.keys() == TypingFolder.__annotations__.keys()
    assert Folder.__module__ == __name__ and Folder.__qualname__ == "Folder"
    assert pickle.loads(pickle.dumps(made)) == made
    with pytest.raises(AttributeError):
        made.path = "/b"  # type: ignore[misc]


def test_what_the_class_defines_is_kept() -> None:
    folder = Folder.written("/w")
    assert folder.writable and not Folder("/r").writable
    assert folder.described() == "/w (rw)"
    assert Folder.__doc__ == "A folder and how it is shown."


def test_a_field_without_a_default_after_one_with_a_default_is_refused_as_typing_refuses_it() -> None:
    for base in (NamedTuple, typing.NamedTuple):
        with pytest.raises(TypeError):

            class Wrong(base):  # type: ignore[misc, valid-type]
                path: str = "/"
                access: str


def test_making_records_loads_no_typing() -> None:
    code = "import sys; from link_plugin import layout, sandbox_terms; print('typing' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
