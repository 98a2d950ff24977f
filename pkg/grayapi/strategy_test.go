package grayapi

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func rolling(surge, unavailable *intstr.IntOrString) appsv1.DeploymentStrategy {
	return appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: surge, MaxUnavailable: unavailable},
	}
}

func ptrIOS(v intstr.IntOrString) *intstr.IntOrString { return &v }

var (
	pct25 = ptrIOS(intstr.FromString("25%"))
	int0  = ptrIOS(intstr.FromInt32(0))
	int1  = ptrIOS(intstr.FromInt32(1))
)

func TestParseStrategy(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    appsv1.DeploymentStrategy
		wantErr string // substring
	}{
		{name: "recreate", value: "Recreate", want: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
		{name: "rolling defaults", value: "RollingUpdate", want: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}},
		{name: "rolling percent", value: "RollingUpdate;maxSurge=25%;maxUnavailable=25%", want: rolling(pct25, pct25)},
		{name: "rolling ints any order", value: "RollingUpdate;maxUnavailable=1;maxSurge=0", want: rolling(int0, int1)},
		{name: "only surge", value: "RollingUpdate;maxSurge=1", want: rolling(int1, nil)},
		{name: "surge above 100 percent", value: "RollingUpdate;maxSurge=200%", want: rolling(ptrIOS(intstr.FromString("200%")), nil)},
		{name: "spaces around", value: " Recreate\n", want: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
		{name: "lower case type", value: "recreate", wantErr: `invalid kubegray.io/strategy "recreate": must be "Recreate", or "RollingUpdate" with optional ";maxSurge=<n or n%>" and ";maxUnavailable=<n or n%>", e.g. "RollingUpdate;maxSurge=25%;maxUnavailable=25%"; strategy type "recreate" is neither Recreate nor RollingUpdate`},
		{name: "empty", value: "", wantErr: `strategy type "" is neither Recreate nor RollingUpdate`},
		{name: "recreate with fields", value: "Recreate;maxSurge=1", wantErr: `Recreate takes no fields`},
		{name: "duplicate field", value: "RollingUpdate;maxSurge=1;maxSurge=2", wantErr: `maxSurge is given twice`},
		{name: "unknown field", value: "RollingUpdate;maxsurge=1", wantErr: `unknown field "maxsurge"`},
		{name: "no equals", value: "RollingUpdate;maxSurge", wantErr: `field "maxSurge" is not key=value`},
		{name: "trailing semicolon", value: "RollingUpdate;", wantErr: `field "" is not key=value`},
		{name: "negative", value: "RollingUpdate;maxSurge=-1", wantErr: `maxSurge: "-1" is not a non-negative integer or percentage`},
		{name: "decimal percent", value: "RollingUpdate;maxSurge=2.5%", wantErr: `maxSurge: "2.5%" is not a non-negative integer or percentage`},
		{name: "empty value", value: "RollingUpdate;maxSurge=", wantErr: `maxSurge: "" is not a non-negative integer or percentage`},
		{name: "too large", value: "RollingUpdate;maxSurge=99999999999", wantErr: `maxSurge: "99999999999" is too large`},
		{name: "both zero", value: "RollingUpdate;maxSurge=0;maxUnavailable=0%", wantErr: `maxSurge and maxUnavailable are both 0`},
		{name: "unavailable above 100 percent", value: "RollingUpdate;maxUnavailable=101%", wantErr: `maxUnavailable 101% is above 100%`},
		{name: "inner spaces", value: "RollingUpdate; maxSurge=1", wantErr: `unknown field " maxSurge"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStrategy(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseStrategy(%q) = %+v, %v; want error containing %q", tt.value, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseStrategy(%q): %v", tt.value, err)
			}
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("ParseStrategy(%q) = %+v, want %+v", tt.value, got, tt.want)
			}
		})
	}
}

func TestFormatStrategy(t *testing.T) {
	tests := []struct {
		name     string
		strategy appsv1.DeploymentStrategy
		want     string
		wantErr  string
	}{
		{name: "recreate", strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, want: "Recreate"},
		{name: "rolling nil", strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}, want: "RollingUpdate"},
		{name: "rolling defaults", strategy: rolling(pct25, pct25), want: "RollingUpdate;maxSurge=25%;maxUnavailable=25%"},
		{name: "rolling ints", strategy: rolling(int0, int1), want: "RollingUpdate;maxSurge=0;maxUnavailable=1"},
		{name: "only unavailable", strategy: rolling(nil, int1), want: "RollingUpdate;maxUnavailable=1"},
		{name: "empty rollingUpdate", strategy: rolling(nil, nil), want: "RollingUpdate"},
		{name: "no type", strategy: appsv1.DeploymentStrategy{}, wantErr: `kubegray.io/strategy: cannot save strategy: strategy type "" is neither Recreate nor RollingUpdate`},
		{name: "recreate with rollingUpdate", strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}, wantErr: `Recreate has rollingUpdate set`},
		{name: "negative", strategy: rolling(ptrIOS(intstr.FromInt32(-1)), nil), wantErr: `maxSurge -1 is negative`},
		{name: "not a percentage", strategy: rolling(ptrIOS(intstr.FromString("lots")), nil), wantErr: `maxSurge "lots" is not a non-negative integer or percentage`},
		{name: "both zero", strategy: rolling(int0, ptrIOS(intstr.FromString("0%"))), wantErr: `maxSurge and maxUnavailable are both 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FormatStrategy(tt.strategy)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FormatStrategy() = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FormatStrategy() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestStrategyRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		value string
	}{
		{name: "recreate", value: "Recreate"},
		{name: "rolling", value: "RollingUpdate"},
		{name: "rolling percent", value: "RollingUpdate;maxSurge=25%;maxUnavailable=25%"},
		{name: "rolling ints", value: "RollingUpdate;maxSurge=0;maxUnavailable=1"},
		{name: "only surge", value: "RollingUpdate;maxSurge=100%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseStrategy(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			got, err := FormatStrategy(s)
			if err != nil || got != tt.value {
				t.Fatalf("FormatStrategy(ParseStrategy(%q)) = %q, %v", tt.value, got, err)
			}
		})
	}
}
