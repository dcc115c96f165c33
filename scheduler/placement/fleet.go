package placement

// MaxGPUsPerNode bounds a node's GPUs, and MaxSlicesPerNode its MIG instances: a
// node's free GPUs and slices are bit sets of one word each.
const (
	MaxGPUsPerNode   = 64
	MaxSlicesPerNode = 64
)

// SlicesPerGPU is the compute slices of one MIG-capable GPU: a GPU's instances
// never use more than this many.
const SlicesPerGPU = 7

// Fleet is the nodes the scheduler places jobs on.
type Fleet struct {
	// Cards are the card types nodes may have (the scheduler model's cards).
	Cards []Card `yaml:"cards" json:"cards"`
	// Levels are the topology levels, finest first, e.g. ["nvlink", "rack",
	// "block"]: a domain of one level lies inside one domain of each coarser level.
	Levels   []string  `yaml:"levels" json:"levels"`
	Clusters []Cluster `yaml:"clusters" json:"clusters"`
}

// Card is a GPU card type.
type Card struct {
	Name string `yaml:"name" json:"name"`
	// MemoryGiB picks its MIG profiles (40: the A100-40GB set; 80: the 80 GB set);
	// cards of other sizes take no MIG layout.
	MemoryGiB int `yaml:"memory_gib" json:"memory_gib"`
}

// Cluster is one scheduling domain: a job runs inside one cluster.
type Cluster struct {
	Name  string `yaml:"name" json:"name"`
	Nodes []Node `yaml:"nodes" json:"nodes"`
}

// Node is one machine.
type Node struct {
	// Name is unique in the fleet (a hostname).
	Name string `yaml:"name" json:"name"`
	Card string `yaml:"card" json:"card"`
	GPUs int    `yaml:"gpus" json:"gpus"`
	// MIG is the MIG layout, per GPU index: the instances' profiles, e.g.
	// ["3g.40gb", "2g.20gb", "2g.20gb"]. A GPU with an empty list (or past the
	// list's end) is not partitioned and is given whole; a partitioned GPU is
	// given only by its instances.
	MIG [][]string `yaml:"mig,omitempty" json:"mig,omitempty"`
	// Topology is the node's domain at each of the fleet's levels, e.g.
	// {"nvlink": "nvl-a3", "rack": "r12", "block": "b2"}. Domain names are
	// scoped to the cluster.
	Topology map[string]string `yaml:"topology,omitempty" json:"topology,omitempty"`
}

// MIGProfile is a MIG instance profile of a card memory size.
type MIGProfile struct {
	Name string
	// Slices is the compute slices (of SlicesPerGPU) the instance uses.
	Slices int
	// MemoryGB is the instance's memory.
	MemoryGB int
}

// migProfiles are NVIDIA's MIG profiles by the card's memory (GiB, as cards are
// configured).
var migProfiles = map[int][]MIGProfile{
	40: {{"1g.5gb", 1, 5}, {"1g.10gb", 1, 10}, {"2g.10gb", 2, 10}, {"3g.20gb", 3, 20}, {"4g.20gb", 4, 20}, {"7g.40gb", 7, 40}},
	80: {{"1g.10gb", 1, 10}, {"1g.20gb", 1, 20}, {"2g.20gb", 2, 20}, {"3g.40gb", 3, 40}, {"4g.40gb", 4, 40}, {"7g.80gb", 7, 80}},
}

// MIGProfiles returns the MIG profiles of cards with memoryGiB of memory, or nil
// when such cards have none.
func MIGProfiles(memoryGiB int) []MIGProfile {
	return migProfiles[memoryGiB]
}

func migProfile(memoryGiB int, name string) (MIGProfile, bool) {
	for _, p := range migProfiles[memoryGiB] {
		if p.Name == name {
			return p, true
		}
	}
	return MIGProfile{}, false
}
