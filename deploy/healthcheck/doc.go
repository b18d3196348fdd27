// Command healthcheck is a container health probe for images without a shell.
//
// The exporter image (distroless) and the OpenTelemetry Collector image
// (scratch) carry no wget or curl, so docker-compose.yml runs this static
// binary as their healthcheck: `healthcheck URL` exits 0 when a GET of URL
// answers 2xx within the timeout, 1 otherwise. It imports only the standard
// library so that the Dockerfiles can build it without the module's
// dependencies.
package main
