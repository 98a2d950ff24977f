package grayapi_test

import (
	"fmt"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func ExampleParsePercent() {
	points, err := grayapi.ParsePercent(" 10%, 30, 60% ")
	fmt.Println(points, err)
	fmt.Println(grayapi.FormatPercent(points))

	_, err = grayapi.ParsePercent("30,10")
	fmt.Println(err)
	// Output:
	// [10 30 60] <nil>
	// 10,30,60
	// invalid kubegray.io/percent "30,10": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; 10 does not come after 30
}

func ExampleParseResume() {
	r, err := grayapi.ParseResume("4:full")
	fmt.Printf("%+v %v\n", r, err)
	fmt.Println(grayapi.FormatResume(grayapi.Resume{Revision: 4}))
	// Output:
	// {Revision:4 Full:true Undo:false Abort:false Retry:false} <nil>
	// 4:next
}

func ExampleParseStrategy() {
	s, err := grayapi.ParseStrategy("RollingUpdate;maxSurge=25%;maxUnavailable=1")
	fmt.Println(s.Type, s.RollingUpdate.MaxSurge, s.RollingUpdate.MaxUnavailable, err)
	back, _ := grayapi.FormatStrategy(s)
	fmt.Println(back)
	// Output:
	// RollingUpdate 25% 1 <nil>
	// RollingUpdate;maxSurge=25%;maxUnavailable=1
}

func ExampleParseStatus() {
	s, err := grayapi.ParseStatus(`{"mode":"instead","revision":2,"stableRevision":1,"step":0,"percent":10,"target":1,"phase":"Held","observedGeneration":4,"heldAt":"2026-03-01T10:00:00Z"}`)
	fmt.Println(s.Phase, s.Revision, s.StableRevision, s.Percent, s.Target, s.HeldAt.UTC().Format("2006-01-02T15:04:05Z"), err)
	// Output:
	// Held 2 1 10 1 2026-03-01T10:00:00Z <nil>
}
