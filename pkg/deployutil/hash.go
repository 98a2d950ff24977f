package deployutil

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// dnsSubdomainMaxLength is the longest object name the API accepts.
const dnsSubdomainMaxLength = 253

// ComputeHash returns the pod-template-hash of template, identical to the
// upstream controller's so our ReplicaSet names match the ones it would
// create: FNV-1a 32 over the spew dump of the template VALUE (dump.ForHash),
// then, if collisionCount is set, its 8-byte little-endian form; the decimal
// sum is mapped to the safe alphabet by rand.SafeEncodeString.
//
// The dump covers every Go struct field, so the result depends on the
// k8s.io/api version (v0.37.2 here), not only on the template's content.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// GenerateReplicaSetName returns "<deployment>-<hash>", cutting the
// Deployment name so the result fits 253 characters; the hash is kept whole
// because it is what makes the name unique. With a hash too long to leave
// room (≥ 252 characters) nothing is cut.
//
//	("web", "5d4c8f7b9")          → "web-5d4c8f7b9"
//	(250×"a", 10-char hash)       → 242×"a" + "-" + hash (253 chars)
func GenerateReplicaSetName(deploymentName, hash string) string {
	maxName := dnsSubdomainMaxLength - 1 - len(hash)
	if len(deploymentName) > maxName && maxName > 0 {
		return deploymentName[:maxName] + "-" + hash
	}
	return deploymentName + "-" + hash
}

// CloneAndAddLabel returns a copy of labels with key=value added; with an
// empty key the original map is returned unchanged (not copied).
func CloneAndAddLabel(labels map[string]string, key, value string) map[string]string {
	if key == "" {
		return labels
	}
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[key] = value
	return out
}

// CloneAndRemoveLabel returns a copy of labels without key; with an empty
// key the original map is returned unchanged (not copied).
func CloneAndRemoveLabel(labels map[string]string, key string) map[string]string {
	if key == "" {
		return labels
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// CloneSelectorAndAddLabel returns a deep copy of sel whose matchLabels also
// require key=value (matchLabels is never nil in the copy); with an empty key
// sel itself is returned.
func CloneSelectorAndAddLabel(sel *metav1.LabelSelector, key, value string) *metav1.LabelSelector {
	if key == "" {
		return sel
	}
	out := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	if sel != nil {
		for k, v := range sel.MatchLabels {
			out.MatchLabels[k] = v
		}
		if sel.MatchExpressions != nil {
			out.MatchExpressions = make([]metav1.LabelSelectorRequirement, len(sel.MatchExpressions))
			for i := range sel.MatchExpressions {
				sel.MatchExpressions[i].DeepCopyInto(&out.MatchExpressions[i])
			}
		}
	}
	out.MatchLabels[key] = value
	return out
}

// SetFromReplicaSetTemplate copies a ReplicaSet's pod template into the
// Deployment (rollback), without the pod-template-hash label. The copy is
// deep: the Deployment shares nothing with the ReplicaSet afterwards.
func SetFromReplicaSetTemplate(d *appsv1.Deployment, template corev1.PodTemplateSpec) *appsv1.Deployment {
	t := template.DeepCopy()
	d.Spec.Template.ObjectMeta = t.ObjectMeta
	d.Spec.Template.Spec = t.Spec
	d.Spec.Template.Labels = CloneAndRemoveLabel(t.Labels, DefaultPodTemplateHashKey)
	return d
}
