package trace

// fieldID names a field of the format; any other key is ignored.
type fieldID uint8

const (
	fType fieldID = iota
	fTs
	fCluster
	fNode
	fGPUUUID
	fGPUIndex
	fModel
	fMIGProfile
	fFBTotal
	fFBUsed
	fGrEngine
	fSMActive
	fSMOccupancy
	fTensor
	fDRAM
	fGPUUtil
	fPCIeTx
	fPCIeRx
	fPower
	fEnergy
	fTemp
	fXID
	fPID
	fProcessName
	fJob
	fSMUtil
	fMemUtil
	fEvent
	fTeam
	fProject
	fQueue
	fPool
	fModelName
	fWorkload
	fGPUs
	fCard
	fNodes
	fGPUUUIDs
	fStatus
	fExitCode
	fAttempt
	fRerunOf
	nFields
)

// fieldNames are the keys exactly as TRACE_FORMAT.md spells them.
var fieldNames = [nFields]string{
	"type", "ts", "cluster", "node", "gpu_uuid", "gpu_index", "model", "mig_profile",
	"fb_total_mib", "fb_used_mib", "gr_engine_active", "sm_active", "sm_occupancy",
	"tensor_active", "dram_active", "gpu_util", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s",
	"power_w", "energy_mj", "temp_c", "xid", "pid", "process_name", "job", "sm_util",
	"mem_util", "event", "team", "project", "queue", "pool", "model_name", "workload",
	"gpus", "card", "nodes", "gpu_uuids", "status", "exit_code", "attempt", "rerun_of",
}

// lookupField returns the field a key names. A switch beats a map here: it is
// called for every key of every line.
func lookupField(key []byte) (fieldID, bool) {
	switch string(key) {
	case "type":
		return fType, true
	case "ts":
		return fTs, true
	case "cluster":
		return fCluster, true
	case "node":
		return fNode, true
	case "gpu_uuid":
		return fGPUUUID, true
	case "gpu_index":
		return fGPUIndex, true
	case "model":
		return fModel, true
	case "mig_profile":
		return fMIGProfile, true
	case "fb_total_mib":
		return fFBTotal, true
	case "fb_used_mib":
		return fFBUsed, true
	case "gr_engine_active":
		return fGrEngine, true
	case "sm_active":
		return fSMActive, true
	case "sm_occupancy":
		return fSMOccupancy, true
	case "tensor_active":
		return fTensor, true
	case "dram_active":
		return fDRAM, true
	case "gpu_util":
		return fGPUUtil, true
	case "pcie_tx_bytes_per_s":
		return fPCIeTx, true
	case "pcie_rx_bytes_per_s":
		return fPCIeRx, true
	case "power_w":
		return fPower, true
	case "energy_mj":
		return fEnergy, true
	case "temp_c":
		return fTemp, true
	case "xid":
		return fXID, true
	case "pid":
		return fPID, true
	case "process_name":
		return fProcessName, true
	case "job":
		return fJob, true
	case "sm_util":
		return fSMUtil, true
	case "mem_util":
		return fMemUtil, true
	case "event":
		return fEvent, true
	case "team":
		return fTeam, true
	case "project":
		return fProject, true
	case "queue":
		return fQueue, true
	case "pool":
		return fPool, true
	case "model_name":
		return fModelName, true
	case "workload":
		return fWorkload, true
	case "gpus":
		return fGPUs, true
	case "card":
		return fCard, true
	case "nodes":
		return fNodes, true
	case "gpu_uuids":
		return fGPUUUIDs, true
	case "status":
		return fStatus, true
	case "exit_code":
		return fExitCode, true
	case "attempt":
		return fAttempt, true
	case "rerun_of":
		return fRerunOf, true
	}
	return 0, false
}
