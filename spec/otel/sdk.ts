/**
 * The OpenTelemetry SDK the otel specs record into: a tracer and a meter writing to memory, and
 * spans as plain data.
 */
import { expect } from 'chai';
import type { HrTime } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { DataPointType, MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import type { InstrumentOptions } from '../../src/otel/index.js';

/** A reader collected by hand (`reader.collect()`), no timers. */
export class ManualReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** A tracer and a meter writing to memory. */
export function sdk() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new ManualReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const options: InstrumentOptions = { tracer: tracerProvider.getTracer('rxheal-spec'), meter: meterProvider.getMeter('rxheal-spec') };
  /** Each metric with data, by name: [attributes, value] per data point (histograms: count, sum, min, max). */
  const collect = async () => {
    const { resourceMetrics, errors } = await reader.collect();
    expect(errors).to.deep.equal([]);
    const out: Record<string, [Record<string, unknown>, unknown][]> = {};
    for (const metric of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics as MetricData[])) {
      if (metric.dataPoints.length === 0) continue;
      out[metric.descriptor.name] = metric.dataPoints.map((p) => {
        const value =
          metric.dataPointType === DataPointType.HISTOGRAM
            ? (({ count, sum, min, max }) => ({ count, sum, min, max }))(p.value as { count: number; sum: number; min: number; max: number })
            : p.value;
        return [{ ...p.attributes }, value];
      });
    }
    return out;
  };
  return { exporter, reader, options, collect, meterProvider, tracerProvider };
}

export const ms = (t: HrTime): number => t[0] * 1000 + t[1] / 1e6;

/** A span as plain data: name, kind, start and end (ms), attributes, status, events (name, ms, attributes). */
export function plain(span: ReadableSpan) {
  return {
    name: span.name,
    kind: span.kind,
    time: [ms(span.startTime), ms(span.endTime)],
    attributes: { ...span.attributes },
    status: span.status,
    events: span.events.map((e) => [e.name, ms(e.time), { ...e.attributes }]),
  };
}
