package otlp

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
const DefaultServiceName = "claude-code"

// NewResource returns the resource of every exported span: service.name
// claude-code and service.version the exporter's version (or "dev"),
// host.name when host is set (it names the machine: off unless the user
// asks for identifying attributes), then OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME, which override the defaults. A malformed
// OTEL_RESOURCE_ATTRIBUTES gives an error along with the resource built
// from the rest.
func NewResource(ctx context.Context, version string, host bool) (*resource.Resource, error) {
	if version == "" {
		version = "dev"
	}
	opts := []resource.Option{
		resource.WithAttributes(
			attribute.String("service.name", DefaultServiceName),
			attribute.String("service.version", version),
		),
	}
	if host {
		opts = append(opts, resource.WithHost())
	}
	opts = append(opts, resource.WithFromEnv())
	res, err := resource.New(ctx, opts...)
	if err != nil {
		return res, fmt.Errorf("build resource: %w", err)
	}
	return res, nil
}
