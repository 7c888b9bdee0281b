"""The typed client classes of a service as Python source: ``{Service}Async`` over
`wirecall.aio.AsyncClient` and ``{Service}`` over the blocking `wirecall.Client`, one method
per service method, and per method returning a `Result` its `TypedApplicationError` subclass.

What a method does follows its schema: a one-way method sends a Notify and returns `None`; a
unary method returns its reply read into its type; a server stream returns a typed stream; a
method that takes an upload (``upload`` set) takes its items as the first positional argument,
``items``, and returns its reply (a client stream) or a typed stream (a bidirectional one).
"""

from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Tuple

from .messages import docstring
from .names import NameRegistry, camel, identifier
from .types import TypeMapper, variant

#: Attributes of the generated classes' base (`wirecall.typed.AsyncService`): a method with
#: one of these names gets a trailing ``_``.
BASE_ATTRIBUTES = frozenset({"_client", "_timeout", "_metadata", "_wire"})


@dataclass
class MethodPlan:
    """One method as generated: its names, its parameters and how its reply is read."""

    schema: Mapping[str, Any]
    python_name: str
    error_class: Optional[str]
    error_type: Any


def _reply_parts(reply: Any) -> Tuple[str, Any, Any]:
    """(the `Reply` shape, the returned type or None, the error type or None)."""
    name, body = variant(reply)
    if name == "Unit":
        return "NOTHING", None, None
    if name == "Value":
        return "VALUE", body, None
    ok, err = body.get("ok"), body.get("err")
    return ("UNIT_RESULT" if ok is None else "RESULT"), ok, err


class ServiceWriter:
    """Writes the error classes and both client classes of one service."""

    def __init__(self, schema: Mapping[str, Any], mapper: TypeMapper, registry: NameRegistry):
        self.schema = schema
        self.mapper = mapper
        self.name: str = schema["name"]
        base = camel(self.name.rsplit(".", 1)[-1]) if "." in self.name else camel(self.name)
        self.blocking_class = registry.claim(base, camel(self.name))
        self.async_class = registry.claim(base + "Async", camel(self.name) + "Async")
        self.methods: List[MethodPlan] = []
        for method in schema.get("methods") or []:
            python_name = identifier(method["name"])
            if python_name in BASE_ATTRIBUTES:
                python_name += "_"
            _, _, error_type = _reply_parts(method.get("reply", "Unit"))
            error_class = None
            if error_type is not None and not method.get("oneway"):
                error_class = registry.claim(base + camel(method["name"]) + "Error")
            self.methods.append(MethodPlan(method, python_name, error_class, error_type))

    def error_classes(self) -> List[str]:
        lines: List[str] = []
        for plan in self.methods:
            if plan.error_class is None:
                continue
            error = self.mapper.annotation(plan.error_type)
            lines += [
                f"class {plan.error_class}(TypedApplicationError[{error}]):",
                f'    """`{self.name}.{plan.schema["name"]}` returned `Err(e)`: `.error` is `e`, a `{error}`."""',
                "",
                "",
            ]
        return lines

    def client_class(self, asynchronous: bool) -> List[str]:
        class_name = self.async_class if asynchronous else self.blocking_class
        base = "AsyncService" if asynchronous else "BlockingService"
        client = "wirecall.aio.AsyncClient" if asynchronous else "wirecall.Client"
        lines = [f"class {class_name}({base}):"]
        doc = self.schema.get("doc", "").strip()
        summary = (
            f"`{self.name}` through a `{client}`: ``{class_name}(client, timeout=..., metadata=...)``; "
            "the timeout and metadata apply to every call."
        )
        lines += docstring(f"{doc}\n\n{summary}" if doc else summary, "    ")
        for plan in self.methods:
            lines.append("")
            lines += self._method(plan, asynchronous)
        return lines

    def _method(self, plan: MethodPlan, asynchronous: bool) -> List[str]:
        method = plan.schema
        mapper = self.mapper
        shape, returned, _ = _reply_parts(method.get("reply", "Unit"))
        oneway = bool(method.get("oneway"))
        server_stream = bool(method.get("server_stream"))
        upload = method.get("upload")
        arguments = [(identifier(argument["name"]), argument) for argument in method.get("args") or []]

        parameters = ["self"]
        items_name = "items"
        if upload is not None:
            while items_name in {name for name, _ in arguments}:
                items_name += "_"
            item_type = mapper.annotation(upload)
            iterable = f"Union[Iterable[{item_type}], AsyncIterable[{item_type}]]" if asynchronous else f"Iterable[{item_type}]"
            parameters += [f"{items_name}: {iterable}", "/"]
        if arguments:
            parameters.append("*")
            for name, argument in arguments:
                annotation = mapper.annotation(argument["ty"])
                default = " = None" if variant(argument["ty"])[0] == "Option" else ""
                parameters.append(f"{name}: {annotation}{default}")

        returned_type = "None" if returned is None else mapper.annotation(returned)
        reads = "None" if returned is None else mapper.from_wire(returned, "reply")
        streams = server_stream and not oneway
        if streams:
            stream_class = "TypedAsyncStream" if asynchronous else "TypedStream"
            signature_return = f"{stream_class}[{returned_type}]"
        else:
            signature_return = "None" if oneway else returned_type
        is_async = asynchronous and not streams
        head = f"    {'async ' if is_async else ''}def {plan.python_name}({', '.join(parameters)}) -> {signature_return}:"

        doc = method.get("doc", "").strip()
        notes = []
        if upload is not None:
            notes.append(f"`{items_name}` are the upload's items, sent as they are taken.")
        if plan.error_class is not None:
            verb = "The stream raises" if streams else "Raises"
            notes.append(f"{verb} `{plan.error_class}` when the method returns `Err(e)`.")
        if oneway:
            notes.append("One-way: sent as a Notify; no reply comes.")
        text = "\n\n".join(part for part in [doc, " ".join(notes)] if part)
        lines = [head] + docstring(text, "        ")

        plain_arguments = "self._wire({" + ", ".join(
            f"{argument['name']!r}: {mapper.to_wire(argument['ty'], name)}" for name, argument in arguments
        ) + "})"
        where = f'"{self.name}", "{method["name"]}"'
        wait = "await " if is_async else ""
        call_options = "timeout=self._timeout, metadata=self._metadata"
        if upload is not None:
            to_wire = mapper.to_wire(upload, "item")
            wrap = "wire_any_items" if asynchronous else "wire_items"
            upload_items = f"{wrap}({items_name}, lambda item: self._wire({to_wire}))"

        if oneway:
            lines.append(f"        {wait}self._client.notify_with({where}, {plain_arguments}, metadata=self._metadata)")
            return lines

        read_error = None
        if plan.error_class is not None:
            read_error = f"{plan.error_class}({mapper.from_wire(plan.error_type, 'failure.error')}, failure)"

        if streams:
            if upload is not None:
                opened = f"self._client.bidi_with({where}, {plain_arguments}, {upload_items}, {call_options})"
            else:
                opened = f"self._client.stream_with({where}, {plain_arguments}, {call_options}, reply=Reply.{shape})"
            read_item = "lambda reply: None" if returned is None else f"lambda reply: {reads}"
            extra = f", lambda failure: {read_error}" if read_error else ""
            lines += [f"        return {stream_class}(", f"            {opened},", f"            {read_item}{extra},", "        )"]
            return lines

        if upload is not None:
            call = f"{wait}self._client.upload_with({where}, {plain_arguments}, {upload_items}, {call_options})"
        else:
            call = f"{wait}self._client.call_with({where}, {plain_arguments}, {call_options}, reply=Reply.{shape})"
        target = "reply = " if returned is not None else ""
        if read_error:
            lines += [
                "        try:",
                f"            {target}{call}",
                "        except ApplicationError as failure:",
                f"            raise {read_error} from None",
            ]
        else:
            lines.append(f"        {target}{call}")
        if returned is not None:
            lines.append(f"        return {reads}")
        return lines
