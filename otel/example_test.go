package otel_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	rlotel "github.com/redlock-go/redlock/otel"
)

// The Observer's metrics exported to Prometheus: an OpenTelemetry
// MeterProvider whose reader is the Prometheus exporter, registered on a
// registry that an HTTP handler (promhttp.HandlerFor) would serve. The
// nodes here are in memory; a driver of this module dials Redis instead.
func Example_prometheus() {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		panic(err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() {
		if err := provider.Shutdown(context.Background()); err != nil {
			fmt.Println("shutdown:", err)
		}
	}()
	observer, err := rlotel.NewObserver(rlotel.WithMeterProvider(provider))
	if err != nil {
		panic(err)
	}
	client, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{Observer: observer})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	lock, err := client.TryLock(ctx, "report")
	if err != nil {
		panic(err)
	}
	if err := lock.Unlock(ctx); err != nil {
		panic(err)
	}

	families, err := registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "redlock_") && !strings.HasPrefix(name, "db_") {
			continue
		}
		fmt.Println(name, f.GetType())
		if name == "redlock_acquire_duration_seconds" {
			for _, m := range f.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					if !strings.HasPrefix(l.GetName(), "otel_scope") {
						labels = append(labels, l.GetName()+"="+l.GetValue())
					}
				}
				fmt.Println("  ", strings.Join(labels, " "), "count", m.GetHistogram().GetSampleCount())
			}
		}
	}
	// Output:
	// db_client_operation_duration_seconds HISTOGRAM
	// redlock_acquire_attempts HISTOGRAM
	// redlock_acquire_duration_seconds HISTOGRAM
	//    db_system_name=redis redlock_acquire_mode=try redlock_outcome=ok count 1
	// redlock_hold_duration_seconds HISTOGRAM
	// redlock_release_duration_seconds HISTOGRAM
}
