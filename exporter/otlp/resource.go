package otlp

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
const DefaultServiceName = "claude-code"

// DefaultProjectName is openinference.project.name, the project Arize
// Phoenix files every span under ("default" without it). One resource
// covers every session the exporter sends, whatever its working
// directory, so it names the tool, not a directory (no path leaves the
// machine); each span's claude_code.project names the session's project.
// OTEL_RESOURCE_ATTRIBUTES=openinference.project.name=... overrides it.
const DefaultProjectName = "claude-code"

// NewResource returns the resource of every exported span: service.name
// claude-code and service.version the exporter's version (or "dev"),
// openinference.project.name DefaultProjectName,
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
			attribute.String(spans.ResourceProjectName, DefaultProjectName),
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
