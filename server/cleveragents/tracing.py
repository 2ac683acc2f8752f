"""OpenTelemetry spans: one per request (stdio and HTTP), task turn, plan step and
outbound A2A call. Off by default, and then free: ``span()`` hands back one shared
no-op object and nothing imports ``opentelemetry``. Every layer may use this module,
as it uses ``ids``; it holds no state but whether tracing is on.

``enable()`` turns it on (the container calls it when the ``tracing`` setting says
so: ``tracing = true`` in a config file's ``[defaults]``, or ``CLEVERAGENTS_TRACING=1``).
It uses the process's tracer provider when one is set (an app that publishes an agent
may have its own); otherwise it sets one up with the exporter ``OTEL_TRACES_EXPORTER`` names: ``otlp`` (the default; needs
``opentelemetry-exporter-otlp``), ``console`` (to stderr: stdout is the stdio
transport's) or ``none``.

Span kinds follow the a2a-sdk's: SERVER for a request served, CLIENT for a call made,
INTERNAL for the work in between. Attribute names follow OpenTelemetry's RPC
conventions (``rpc.system``, ``rpc.method``, ``rpc.jsonrpc.*``, ``url.full``) and
the A2A names below.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

logger = logging.getLogger(__name__)

SCOPE = "cleveragents"
# Attribute names.
RPC_SYSTEM = "rpc.system"
RPC_METHOD = "rpc.method"
RPC_REQUEST_ID = "rpc.jsonrpc.request_id"
RPC_ERROR_CODE = "rpc.jsonrpc.error_code"
RPC_ERROR_MESSAGE = "rpc.jsonrpc.error_message"
URL = "url.full"
TRANSPORT = "cleveragents.transport"
PROTOCOL_VERSION = "a2a.protocol.version"
TASK_ID = "a2a.task.id"
CONTEXT_ID = "a2a.context.id"
TASK_STATE = "a2a.task.state"
ACTOR = "cleveragents.actor"
PLAN_ID = "cleveragents.plan.id"
STEP_ID = "cleveragents.plan.step.id"
STEP_INDEX = "cleveragents.plan.step.index"
TOOL = "cleveragents.tool"
OUTCOME = "cleveragents.outcome"

_tracer: Any = None


class _NoSpan:
    """What ``span()`` gives while tracing is off: every method does nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def set_attribute(self, key: str, value: Any) -> None:
        return None

    def is_recording(self) -> bool:
        return False


NO_SPAN = _NoSpan()


def on() -> bool:
    return _tracer is not None


def span(name: str, kind: str = "internal", attributes: Mapping[str, Any] | None = None,
         carrier: Mapping[str, str] | None = None) -> Any:
    """A context manager for a span named ``name`` (kind ``server``, ``client`` or
    ``internal``), the current span's child, or, given ``carrier`` (a request's
    ``traceparent`` headers), the caller's. Entering it gives the span."""
    if _tracer is None:
        return NO_SPAN
    return _start(name, kind, attributes, carrier)


def detached_span(name: str, kind: str = "internal", attributes: Mapping[str, Any] | None = None) -> Any:
    """Like ``span()``, but the span does not become the current one: for a span that
    lives across the ``yield``s of an async generator (a stream being read), where the
    current span would leak into whatever the consumer does between items."""
    if _tracer is None:
        return NO_SPAN
    return _Detached(name, kind, attributes)


class _Detached:
    def __init__(self, name: str, kind: str, attributes: Mapping[str, Any] | None):
        self.name, self.kind, self.attributes = name, kind, attributes
        self.span: Any = None

    def __enter__(self) -> Any:
        from opentelemetry.trace import SpanKind

        clean = {k: v for k, v in (self.attributes or {}).items() if v is not None}
        self.span = _tracer.start_span(self.name, kind=getattr(SpanKind, self.kind.upper()), attributes=clean)
        return self.span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, Exception):
            self.span.record_exception(exc)
            failed(self.span, str(exc) or type(exc).__name__)
        self.span.end()


def failed(current: Any, message: str, code: int | None = None) -> None:
    """Mark ``current`` as failed (an error answered, not raised)."""
    if current is NO_SPAN or not current.is_recording():
        return
    from opentelemetry.trace import Status, StatusCode

    if code is not None:
        current.set_attribute(RPC_ERROR_CODE, code)
    current.set_attribute(RPC_ERROR_MESSAGE, message[:500])
    current.set_status(Status(StatusCode.ERROR, message[:500]))


def inject(headers: MutableMapping[str, str], of: Any = None) -> None:
    """Add the ``traceparent`` (W3C Trace Context) of span ``of``, else of the current
    span, to outgoing headers."""
    if _tracer is None:
        return
    from opentelemetry import propagate, trace

    context = trace.set_span_in_context(of) if of is not None and of is not NO_SPAN else None
    propagate.inject(headers, context=context)


def enable(provider: Any = None) -> None:
    """Turn tracing on, with ``provider`` or the process's tracer provider (one set up
    here when there is none); already on, without a ``provider``, it stays as it is.
    ``ImportError`` names the extra when it is missing."""
    global _tracer
    if _tracer is not None and provider is None:
        return
    try:
        from opentelemetry import trace
    except ImportError:
        raise ImportError("tracing needs the tracing extra: pip install -e '.[tracing]' in the checkout, "
                          "or pip install opentelemetry-api opentelemetry-sdk") from None
    from cleveragents._version import __version__

    if provider is None:
        provider = trace.get_tracer_provider()
        if type(provider).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):
            provider = _default_provider()
            trace.set_tracer_provider(provider)
    _tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=provider)


def disable() -> None:
    global _tracer
    _tracer = None


def _start(name: str, kind: str, attributes: Mapping[str, Any] | None, carrier: Mapping[str, str] | None) -> Any:
    from opentelemetry.trace import SpanKind

    context = None
    if carrier:
        from opentelemetry import propagate

        context = propagate.extract(carrier)
    kinds = {"server": SpanKind.SERVER, "client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}
    clean = {k: v for k, v in (attributes or {}).items() if v is not None}
    return _tracer.start_as_current_span(name, context=context, kind=kinds[kind], attributes=clean)


def _default_provider() -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", SCOPE)}))
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    exporter: Any = None
    if exporter_name == "console":
        exporter = ConsoleSpanExporter(out=sys.stderr)
    elif exporter_name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            logger.warning("tracing is on but opentelemetry-exporter-otlp is not installed: spans are not "
                           "exported (OTEL_TRACES_EXPORTER=console writes them to stderr)")
        else:
            exporter = OTLPSpanExporter()
    elif exporter_name != "none":
        logger.warning("OTEL_TRACES_EXPORTER=%s is not one of otlp, console, none: spans are not exported",
                       exporter_name)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
