// Package measure takes a metric gate's measurements off the sync path: a pool runs at most one
// measurement per Deployment's gate at a time, at most a provider's concurrency at once against
// that provider (a namespace at most half of it, freed slots going to the namespace holding the
// fewest), each bounded by the provider's timeout from the moment it asks for a slot, keeps the
// latest result of each gate until the Deployment's next sync records it, and queues that sync. A
// slow or dead provider delays no sync, and one namespace's gates do not starve another's
// (docs/gates.md).
package measure
