package deployutil

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FieldOwner returns the field manager that owns the field at path (FieldsV1 keys, e.g.
// "f:spec", "f:replicas") according to managedFields, or "" when no entry owns it. An update
// hands a field to its writer, so the owner is the field's last writer: the one that last
// resized a ReplicaSet, or that last wrote a Deployment's status.observedGeneration.
func FieldOwner(entries []metav1.ManagedFieldsEntry, path ...string) string {
	for _, entry := range entries {
		if entry.FieldsV1 != nil && OwnsPath(entry.FieldsV1.GetRawBytes(), path) {
			return entry.Manager
		}
	}
	return ""
}

// OwnsPath reports whether the FieldsV1 set raw contains path (FieldsV1 keys, as FieldOwner
// takes them).
func OwnsPath(raw []byte, path []string) bool {
	for _, key := range path {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			return false
		}
		next, ok := fields[key]
		if !ok {
			return false
		}
		raw = next
	}
	return true
}
