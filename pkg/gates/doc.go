// Package gates reads gate definitions and providers and judges measurements against them: a
// definition's YAML (a ConfigMap key, or the built-in pods gate), its CEL conditions compiled
// and cost-limited once, a metric gate's query rendered and scoped to its namespace, what the
// pods gate counts of a revision's pods, what a Prometheus result or a webhook's answer means.
// It does no I/O and reads no clock: gray-controller measures (controller/measure) and decides
// what the outcomes mean for a hold (controller/gray), and kubectl gray gate lint checks
// definitions with it offline (docs/gates.md).
package gates
