"""OpenTelemetry traces (the ``ponder[otel]`` extra), on when ``otlp_endpoint`` is set.

``connect()`` adds Temporal's ``TracingInterceptor`` to the client; a worker built on that client
takes it too (the SDK hands a client's worker interceptors to its workers), so one trace runs
from the CLI's start through the workflow to each model call. Spans go to the endpoint over
OTLP/HTTP. Nothing here imports opentelemetry-sdk unless tracing is configured, and the endpoint
comes from the worker's or client's own settings, never from a run's input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio.client import Interceptor

from activities.config import Settings
from activities.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["OTEL_MISSING", "interceptors", "tracer_provider"]

OTEL_MISSING = "telemetry.otel_missing"


_providers: dict[str, TracerProvider] = {}


def tracer_provider(endpoint: str, exporter: SpanExporter | None = None) -> TracerProvider:
    """The process's one provider for ``endpoint``: spans batched to it over OTLP/HTTP.

    Cached, so every client a process connects shares one exporter. A process that wants its
    spans elsewhere (a test's in-memory exporter) passes ``exporter`` before it connects; it is
    then written synchronously, so a span is there as soon as it ends.
    """
    if endpoint in _providers:
        return _providers[endpoint]
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as exc:
        raise _missing(exc) from exc
    provider = TracerProvider(resource=Resource.create({"service.name": "ponder"}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise _missing(exc) from exc
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    _providers[endpoint] = provider
    return provider


def interceptors(settings: Settings) -> list[Interceptor]:
    """The client interceptors tracing adds: none when ``otlp_endpoint`` is unset."""
    if not settings.otlp_endpoint:
        return []
    provider = tracer_provider(settings.otlp_endpoint)
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(provider.get_tracer("ponder"))]


def _missing(exc: ImportError) -> ConfigError:
    return ConfigError(
        OTEL_MISSING,
        f"otlp_endpoint is set but OpenTelemetry is not installed ({exc.name}): install the "
        "extra with `pip install 'ponder[otel]'`, or unset otlp_endpoint / PONDER_OTLP_ENDPOINT",
    )
