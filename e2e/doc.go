// Package e2e holds the end-to-end tests of the real binary: one-shot runs
// on every real transcript tree against goldens and an independent count,
// a real Prometheus scraping the daemon, bad input, and bad flags. It has
// no non-test code beyond this comment.
package e2e
