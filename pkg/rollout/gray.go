package rollout

// GrayTarget returns how many replicas the new (gray) ReplicaSet should run
// when a Deployment of R replicas is held at P percent:
//
//	P ≤ 0 or R ≤ 0: 0
//	T = ceil(R·P/100)      (P above 100 counts as 100)
//	T ≥ 1                  (a positive percentage always gets a canary)
//	T ≤ R − 1 when R ≥ 2   (a gray step never replaces every old replica)
//
// A single-replica Deployment (R = 1) has no old replica to keep, so any
// positive percentage gives 1.
//
// Worked table (computed by hand):
//
//	 R \ P |  1  33  34  50  99
//	-------+--------------------
//	   1   |  1   1   1   1   1
//	   2   |  1   1   1   1   1   (99: ceil 1.98 = 2, capped at R−1 = 1)
//	   3   |  1   1   2   2   2   (33: ceil 0.99 = 1; 34: ceil 1.02 = 2; 99: 3 capped at 2)
//	  10   |  1   4   4   5   9   (1: ceil 0.1 = 1; 33: ceil 3.3 = 4; 99: 10 capped at 9)
func GrayTarget(replicas int32, percent int32) int32 {
	if replicas <= 0 || percent <= 0 {
		return 0
	}
	if percent > 100 {
		percent = 100
	}
	// int64 so that R·P cannot overflow for any int32 R.
	t := int32((int64(replicas)*int64(percent) + 99) / 100)
	if t < 1 {
		t = 1
	}
	if replicas >= 2 && t > replicas-1 {
		t = replicas - 1
	}
	return t
}
