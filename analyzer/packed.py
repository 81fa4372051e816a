"""Fields of a cached object that a run seldom reads, pickled together as one blob and read
back at their first use.

The cached rule set is unpickled by every run, and unpickling costs per object made. A rule's
texts beyond its title (its explanation, remediation, references, Chinese texts, self-tests)
are read only when it fires or by `rules show` and `rules test`; a signature's examples, origin
and references only by the linter and `rules show`: about 5,000 of the set's 16,000 objects.

`packed(*names)` decorates a dataclass: its pickled state holds those fields as one blob, and
the first look at any of them reads them all back. A field's default is the dataclass's
`__init__`'s own, not a class attribute (which would be found before `__getattr__` is asked,
so the packed value would never be read back): the decorator removes those attributes.

`dump` writes the set with every dataclass instance's state lean: a field that holds its
default, which the class keeps as an attribute, is left out of the state and read from the
class (about a fifth of the set's fields: unpickling it takes a fifth less time)."""

from __future__ import annotations

import dataclasses
import functools
import pickle
from typing import IO, Any

BLOB = "_packed"  # the state's key of the blob


def packed(*names: str):
    """The class decorator; a `__getstate__` of the class's own gives the state to pack from."""

    def wrap(cls: type) -> type:
        for name in names:
            if name in vars(cls):
                delattr(cls, name)
        own = vars(cls).get("__getstate__")

        def __getstate__(self) -> dict:
            state = own(self) if own is not None else dict(self.__dict__)
            if BLOB not in state:  # else still packed, as read from the cache and not used since
                blob = {name: state.pop(name) for name in names if name in state}
                state[BLOB] = pickle.dumps(blob, protocol=pickle.HIGHEST_PROTOCOL)
            return state

        cls._packed_fields = names  # type: ignore[attr-defined]
        cls.__getstate__ = __getstate__  # type: ignore[assignment]
        cls.__setstate__ = _setstate  # type: ignore[attr-defined]
        cls.__getattr__ = _getattr  # type: ignore[attr-defined]
        return cls

    return wrap


def _setstate(self, state: dict) -> None:
    self.__dict__.update(state)  # without it, pickle would ask `__getattr__` for it


def _getattr(self, name: str) -> Any:
    """A packed field, all of them read back (only called for an attribute the instance
    lacks)."""
    if name in type(self)._packed_fields:
        # the fields first, then the blob dropped: a thread reading them meanwhile, or an
        # exception raised in between (batch's per-bundle timeout), finds one or the other
        blob = self.__dict__.get(BLOB)
        if blob is not None:
            self.__dict__.update(pickle.loads(blob))
            self.__dict__.pop(BLOB, None)
        if name in self.__dict__:  # read back here, or by another thread since its lookup
            return self.__dict__[name]
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def dump(obj: Any, fh: IO[bytes]) -> None:
    """`pickle.dump` with every dataclass instance's state lean (see the module's docstring)."""
    _LeanPickler(fh, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)


class _LeanPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if not dataclasses.is_dataclass(cls) or isinstance(obj, type):
            return NotImplemented
        reduced = obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
        defaults = _class_defaults(cls)
        if len(reduced) < 3 or not isinstance(reduced[2], dict) or not defaults:
            return reduced
        state = {
            k: v
            for k, v in reduced[2].items()
            if not (k in defaults and type(v) is type(defaults[k]) and v == defaults[k])
        }
        return (*reduced[:2], state, *reduced[3:])


@functools.cache
def _class_defaults(cls: type) -> dict[str, Any]:
    """The fields whose default the class holds as an attribute (what an instance without the
    field in its `__dict__` reads)."""
    return {
        f.name: f.default
        for f in dataclasses.fields(cls)
        if f.default is not dataclasses.MISSING and getattr(cls, f.name, _NONE) is f.default
    }


_NONE = object()
