package sim

import (
	"encoding/hex"
	"strconv"
)

// The tables in this file are read-only catalogues: names, cards and models the
// fleet draws from. Nothing writes to them after package initialisation.

// region is where a cluster runs; its UTC offset drives the diurnal traffic of the
// online inference services there.
type region struct {
	name       string
	utcOffsetH int
}

var regions = [...]region{
	{"us-east", -5}, {"eu-west", 0}, {"us-west", -8}, {"ap-southeast", 8},
	{"eu-central", 1}, {"ap-northeast", 9}, {"us-central", -6}, {"sa-east", -3},
}

// clusterLetter names cluster i in bijective base 26: a..z, aa, ab, … so names stay
// unique for any cluster count.
func clusterLetter(i int) string {
	var buf [8]byte
	p := len(buf)
	for n := i + 1; n > 0; n = (n - 1) / 26 {
		p--
		buf[p] = byte('a' + (n-1)%26)
	}
	return string(buf[p:])
}

// clusterName is e.g. "us-east-a", "eu-west-b".
func clusterName(i int) string {
	return regions[i%len(regions)].name + "-" + clusterLetter(i)
}

// nodeName is e.g. "gpu-a-007": the cluster's letter keeps names unique fleet-wide.
func nodeName(cluster, node int) string {
	num := strconv.Itoa(node + 1)
	for len(num) < 3 {
		num = "0" + num
	}
	return "gpu-" + clusterLetter(cluster) + "-" + num
}

// formatUUID renders two words as an 8-4-4-4-12 hex UUID. With v4 set it carries
// the version and variant bits of a random UUID (Kubernetes pod UIDs); GPU UUIDs
// are plain hex as the driver prints them.
func formatUUID(hi, lo uint64, v4 bool) string {
	var raw [16]byte
	for i := range 8 {
		raw[i] = byte(hi >> (56 - 8*i))
		raw[8+i] = byte(lo >> (56 - 8*i))
	}
	if v4 {
		raw[6] = raw[6]&0x0f | 0x40
		raw[8] = raw[8]&0x3f | 0x80
	}
	var out [36]byte
	hex.Encode(out[0:8], raw[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], raw[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], raw[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], raw[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], raw[10:16])
	return string(out[:])
}

// cardSpec is one GPU model as the driver reports it, with the power figures that
// shape its samples.
type cardSpec struct {
	model string
	fbMiB uint32
	// tdpW is the board power limit; training runs close to it.
	tdpW float32
	// idleW is the draw of a GPU with no work and no context.
	idleW float32
	// pcieBytesPerS is the practical link bandwidth (Gen5 x16 for H100/L40S,
	// Gen4 x16 for A100).
	pcieBytesPerS float32
	// rank orders cards by price, cheapest first, so jobs that accept any card
	// land on cheap ones first.
	rank int
}

var (
	cardH100  = cardSpec{model: "NVIDIA H100 80GB HBM3", fbMiB: 81559, tdpW: 700, idleW: 72, pcieBytesPerS: 50e9, rank: 3}
	cardA100  = cardSpec{model: "NVIDIA A100-SXM4-40GB", fbMiB: 40960, tdpW: 400, idleW: 58, pcieBytesPerS: 25e9, rank: 1}
	cardL40S  = cardSpec{model: "NVIDIA L40S", fbMiB: 46068, tdpW: 350, idleW: 62, pcieBytesPerS: 50e9, rank: 0}
	cardA100L = cardSpec{model: "NVIDIA A100 80GB PCIe", fbMiB: 81920, tdpW: 300, idleW: 60, pcieBytesPerS: 25e9, rank: 2}
)

// migSlice is one MIG instance in a GPU's layout: its profile, compute slices out
// of 7 (its share of the GPU's power) and memory.
type migSlice struct {
	profile string
	slices  int
	fbMiB   uint32
}

// MIG layouts used by MIG-enabled nodes. Memory sizes are what the driver reports
// for each profile.
var (
	migA100Mixed = []migSlice{{"3g.20gb", 3, 19968}, {"2g.10gb", 2, 9984}, {"1g.5gb", 1, 4864}, {"1g.5gb", 1, 4864}}
	migA100L7    = []migSlice{{"1g.10gb", 1, 9856}, {"1g.10gb", 1, 9856}, {"1g.10gb", 1, 9856}, {"1g.10gb", 1, 9856}, {"1g.10gb", 1, 9856}, {"1g.10gb", 1, 9856}, {"1g.10gb", 1, 9856}}
)

// nodeType is a node's card and, when MIG is enabled, the layout of every GPU.
type nodeType struct {
	card *cardSpec
	mig  []migSlice
}

// nodeTypes is the node mix of a cluster, rotated by cluster index so that small
// fleets still get every card type and at least one MIG node once they have four
// nodes (index 1 is always MIG-enabled).
var nodeTypes = [...]nodeType{
	{&cardH100, nil},
	{&cardA100, migA100Mixed},
	{&cardL40S, nil},
	{&cardA100L, nil},
	{&cardH100, nil},
	{&cardA100, nil},
	{&cardH100, nil},
	{&cardA100L, migA100L7},
}

// Pools, as DESIGN.md names them.
const (
	poolTrainingExp     = "training-exp"
	poolTrainingProd    = "training-prod"
	poolInferenceOnline = "inference-online"
	poolInferenceBatch  = "inference-batch"
	poolDev             = "dev"
)

// team owns projects; jobs are billed to both.
type team struct {
	name     string
	projects []string
}

var teams = [...]team{
	{"nlp", []string{"chat-assistant", "search-ranking", "summarization"}},
	{"vision", []string{"image-gen", "detection", "ocr"}},
	{"recsys", []string{"feed-ranking", "ads-ctr"}},
	{"speech", []string{"asr", "tts"}},
	{"research", []string{"rl-agents", "scaling-laws", "multimodal"}},
}

// model is an AI model a job trains or serves, with the team that owns it. small
// models fit a MIG slice or a fraction of a big card.
type model struct {
	name  string
	team  int
	small bool
	llm   bool
}

var models = [...]model{
	{"llama-3-70b-sft", 0, false, true},
	{"llama-3-8b-instruct", 0, false, true},
	{"mistral-7b-chat", 0, false, true},
	{"bert-base-ranker", 0, true, false},
	{"resnet50", 1, true, false},
	{"sdxl", 1, false, false},
	{"yolov8-l", 1, true, false},
	{"vit-l16", 1, false, false},
	{"dlrm-v2", 2, false, false},
	{"two-tower-retrieval", 2, true, false},
	{"dcn-v2", 2, false, false},
	{"whisper-large", 3, false, false},
	{"whisper-small", 3, true, false},
	{"fastspeech2", 3, true, false},
	{"mixtral-8x7b", 4, false, true},
	{"clip-vit-l", 4, false, false},
	{"ppo-agent", 4, true, false},
}

// modelIndex returns the index of a model in models by name; the kind tables below
// use names so they read as what they mean.
func modelIndex(name string) int {
	for i := range models {
		if models[i].name == name {
			return i
		}
	}
	panic("sim: unknown model " + name) // a typo in a table below, caught by any test
}
