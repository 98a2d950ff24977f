package gray

import "time"

// testNow is the instant every decision here is asked at.
var testNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
