"""Reading a reply message: `value`, `ok`/`err`, or nothing (Payloads, the reply table)."""

import enum
from typing import Any, Dict

from .errors import ApplicationError


class Reply(enum.Enum):
    """The shape of a method's reply, from its Rust return type.

    `AUTO` reads it from the fields present, which is always right with JSON and right with
    MessagePack except for ``Result<(), E>``, whose one-element reply looks like a `value`:
    pass ``reply=Reply.UNIT_RESULT`` for such a method over MessagePack.
    """

    AUTO = "auto"
    #: ``-> T``: the reply is ``value``.
    VALUE = "value"
    #: ``-> Result<T, E>``: ``ok`` is returned, ``err`` raised as `ApplicationError`.
    RESULT = "result"
    #: ``-> Result<(), E>``: ``None`` is returned, ``err`` raised as `ApplicationError`.
    UNIT_RESULT = "unit_result"
    #: ``-> ()`` or nothing: ``None``.
    NOTHING = "nothing"
    #: The decoded reply message itself, uninterpreted.
    RAW = "raw"


def interpret_reply(fields: Dict[str, Any], shape: Reply) -> Any:
    """What a call returns for these reply fields; raises `ApplicationError` for an ``err``."""
    if shape is Reply.RAW:
        return fields
    if shape is Reply.NOTHING:
        return None
    if "err" in fields or "ok" in fields:
        # A result reply: exactly one side is set, and `err` set means the method's `Err(e)`.
        if fields.get("err") is not None:
            raise ApplicationError(fields["err"])
        if shape is Reply.UNIT_RESULT:
            return None
        return fields.get("ok")
    if "value" in fields:
        return fields["value"]
    if not fields:
        return None
    raise ValueError(f"a reply has `value`, `ok`/`err` or no field, not {sorted(fields)}")
