package otlp

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/user"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// MetricsServiceName is service.name of pushed metrics (a backend's job),
// unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise: the
// name Prometheus scrapes the exporter under in deploy/prometheus.
const MetricsServiceName = "claude-transcript-exporter"

// Identity says who pushes: what goes on the resource of pushed metrics.
type Identity struct {
	// Host adds host.name and user.name (the OS user): they name the
	// machine and the person, so they are sent only when asked for.
	Host bool
	// Attributes are extra resource attributes (--identity.attribute),
	// e.g. team or e-mail.
	Attributes map[string]string
}

// NewMetricsResource returns the resource of pushed metrics:
// service.name, service.version, and service.instance.id, an opaque id
// stable per machine and OS user (a hash: it names neither) that keeps
// machines apart in a shared backend; host.name and user.name only with
// Identity.Host; then the identity attributes, OTEL_RESOURCE_ATTRIBUTES
// and OTEL_SERVICE_NAME, each overriding what comes before.
func NewMetricsResource(ctx context.Context, version string, id Identity) (*resource.Resource, error) {
	if version == "" {
		version = "dev"
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", MetricsServiceName),
		attribute.String("service.version", version),
		attribute.String("service.instance.id", InstanceID()),
	}
	if id.Host {
		if h, err := os.Hostname(); err == nil {
			attrs = append(attrs, attribute.String("host.name", h))
		}
		if u, err := user.Current(); err == nil {
			attrs = append(attrs, attribute.String("user.name", u.Username))
		}
	}
	for k, v := range id.Attributes {
		attrs = append(attrs, attribute.String(k, v))
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil {
		return res, fmt.Errorf("build resource: %w", err)
	}
	return res, nil
}

// InstanceID is an opaque id stable per machine and OS user: a hash of the
// machine id (/etc/machine-id, else the host name) and the user id,
// formatted as a UUID.
func InstanceID() string {
	machine := ""
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			machine = strings.TrimSpace(string(b))
			break
		}
	}
	if machine == "" {
		machine, _ = os.Hostname()
	}
	uid := fmt.Sprint(os.Getuid())
	if u, err := user.Current(); err == nil {
		uid = u.Uid
	}
	sum := sha256.Sum256([]byte("claude-transcript-exporter\x00" + machine + "\x00" + uid))
	sum[6] = sum[6]&0x0f | 0x50 // version 5-like: name-based
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}
