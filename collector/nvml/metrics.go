package nvml

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the NVML source's Prometheus metrics: what each GPU cannot report,
// which NVML calls fail, how many GPUs are lost, and the XIDs read.
type Metrics struct {
	unsupported *prometheus.GaugeVec
	callErrors  *prometheus.CounterVec
	gpusLost    prometheus.Gauge
	xids        *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		unsupported: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_nvml_field_unsupported",
			Help: "1 for each field a GPU or MIG instance cannot report (NVML answered ERROR_NOT_SUPPORTED or the driver lacks the function); the field is left missing in its samples.",
		}, []string{"gpu_uuid", "field"}),
		callErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_nvml_call_errors_total",
			Help: "NVML calls that failed for a reason other than an unsupported field, by function and NVML return code.",
		}, []string{"function", "error"}),
		gpusLost: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpupool_nvml_gpus_lost",
			Help: "GPUs answering ERROR_GPU_IS_LOST at the last tick (fallen off the bus; they need a reset). They are not sampled.",
		}),
		xids: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_nvml_xid_events_total",
			Help: "XID errors read from the NVML event set, by GPU (gpu_uuid empty: a GPU the source does not sample). The GPU's next sample carries the XID.",
		}, []string{"gpu_uuid"}),
	}
	if reg != nil {
		reg.MustRegister(m.unsupported, m.callErrors, m.gpusLost, m.xids)
	}
	return m
}

// field names a sample field (or group of fields) that NVML may not provide, for
// gpupool_nvml_field_unsupported.
type field uint8

const (
	fieldNone field = iota
	fieldFB
	fieldGPUUtil
	fieldPower
	fieldEnergy
	fieldTemp
	fieldPCIeTx
	fieldPCIeRx
	fieldClocks
	fieldECC
	fieldComputeProcesses
	fieldGraphicsProcesses
	fieldProcessUtil
	fieldMIGProfile
	fieldXID
)

// fieldNames are the label values: the trace format's names where one field maps
// to one column.
var fieldNames = [...]string{
	fieldNone:              "",
	fieldFB:                "fb_used_mib",
	fieldGPUUtil:           "gpu_util",
	fieldPower:             "power_w",
	fieldEnergy:            "energy_mj",
	fieldTemp:              "temp_c",
	fieldPCIeTx:            "pcie_tx_bytes_per_s",
	fieldPCIeRx:            "pcie_rx_bytes_per_s",
	fieldClocks:            "clock_event_reasons",
	fieldECC:               "ecc_volatile",
	fieldComputeProcesses:  "compute_processes",
	fieldGraphicsProcesses: "graphics_processes",
	fieldProcessUtil:       "process_util",
	fieldMIGProfile:        "mig_profile",
	fieldXID:               "xid",
}

func (f field) String() string { return fieldNames[f] }

// fieldSet is a set of fields, one bit each.
type fieldSet uint32

func (s fieldSet) has(f field) bool { return s&(1<<f) != 0 }
