"""Fields of a cached object that a run seldom reads, pickled together as one blob and read
back at their first use.

The cached rule set is unpickled by every run, and unpickling costs per object made. A rule's
texts beyond its title (its explanation, remediation, references, Chinese texts, self-tests)
are read only when it fires or by `rules show` and `rules test`; a signature's examples, origin
and references only by the linter and `rules show`: about 5,000 of the set's 16,000 objects.

`packed(*names)` decorates a dataclass: its pickled state holds those fields as one blob, and
the first look at any of them reads them all back. A field's default is the dataclass's
`__init__`'s own, not a class attribute (which would be found before `__getattr__` is asked,
so the packed value would never be read back): the decorator removes those attributes."""

from __future__ import annotations

import pickle
from typing import Any

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
