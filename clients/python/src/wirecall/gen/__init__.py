"""Typed stubs for wirecall services: ``python -m wirecall gen HOST:PORT -o stubs.py``.

From the services' schemas (reflection, or a schema file) it writes one module with a
dataclass or enum per message type and, per service, a typed client class for asyncio
(``{Service}Async``) and a blocking one (``{Service}``). See the README's "Typed stubs".
"""

from .module import generate_module

__all__ = ["generate_module"]
