package helm

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The custom resources the chart renders, with the fields of their CRDs that it
// uses (prometheus-operator's monitoring.coreos.com/v1, Altinity's
// clickhouse.altinity.com/v1). Decoded strictly, a field the chart writes that is
// not here, or of another type, fails the test: add a field only after checking
// the CRD has it.

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ServiceMonitor is monitoring.coreos.com/v1 ServiceMonitor.
type ServiceMonitor struct {
	typeMeta `json:",inline"`
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		JobLabel  string `json:"jobLabel,omitempty"`
		Endpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path,omitempty"`
			Scheme      string `json:"scheme,omitempty"`
			Interval    string `json:"interval,omitempty"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels,omitempty"`
				TargetLabel  string   `json:"targetLabel,omitempty"`
				Regex        string   `json:"regex,omitempty"`
				Replacement  string   `json:"replacement,omitempty"`
				Action       string   `json:"action,omitempty"`
			} `json:"relabelings,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// PrometheusRule is monitoring.coreos.com/v1 PrometheusRule.
type PrometheusRule struct {
	typeMeta `json:",inline"`
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Groups []struct {
			Name     string `json:"name"`
			Interval string `json:"interval,omitempty"`
			Rules    []struct {
				Alert       string            `json:"alert,omitempty"`
				Record      string            `json:"record,omitempty"`
				Expr        string            `json:"expr"`
				For         string            `json:"for,omitempty"`
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// ClickHouseInstallation is clickhouse.altinity.com/v1 ClickHouseInstallation.
type ClickHouseInstallation struct {
	typeMeta `json:",inline"`
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Configuration struct {
			Zookeeper struct {
				Nodes []struct {
					Host string `json:"host"`
					Port int    `json:"port"`
				} `json:"nodes"`
			} `json:"zookeeper"`
			Users    map[string]any `json:"users,omitempty"`
			Clusters []struct {
				Name   string `json:"name"`
				Layout struct {
					ShardsCount   int `json:"shardsCount"`
					ReplicasCount int `json:"replicasCount"`
				} `json:"layout"`
			} `json:"clusters"`
		} `json:"configuration"`
		Defaults struct {
			Templates struct {
				PodTemplate             string `json:"podTemplate,omitempty"`
				DataVolumeClaimTemplate string `json:"dataVolumeClaimTemplate,omitempty"`
			} `json:"templates"`
		} `json:"defaults"`
		Templates struct {
			PodTemplates []struct {
				Name string        `json:"name"`
				Spec podSpecSubset `json:"spec"`
			} `json:"podTemplates"`
			VolumeClaimTemplates []struct {
				Name string `json:"name"`
				Spec struct {
					AccessModes      []string `json:"accessModes"`
					StorageClassName string   `json:"storageClassName,omitempty"`
					Resources        struct {
						Requests map[string]string `json:"requests"`
					} `json:"resources"`
				} `json:"spec"`
			} `json:"volumeClaimTemplates"`
		} `json:"templates"`
	} `json:"spec"`
}

type podSpecSubset struct {
	Containers []struct {
		Name      string `json:"name"`
		Image     string `json:"image"`
		Resources struct {
			Requests map[string]string `json:"requests"`
			Limits   map[string]string `json:"limits"`
		} `json:"resources"`
	} `json:"containers"`
}
