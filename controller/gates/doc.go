// Package gates reads gate definitions and judges measurements against them: a definition's
// YAML (a ConfigMap key, or the built-in pods gate), its CEL conditions compiled and
// cost-limited once, and what the pods gate counts of a revision's pods. It does no I/O and
// reads no clock; controller/gray decides what the outcomes mean for a hold
// (docs/gates.md).
package gates
