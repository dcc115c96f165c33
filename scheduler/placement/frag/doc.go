// Package frag measures GPU fragmentation and compares placement policies for
// GPU-sharing workloads on a real production trace.
//
// In: the Alibaba GPU cluster trace of 2023 (nodes.csv, pods.csv or its
// GPU-sharing variant pods_gpushare40.csv; see DecodeNodes and DecodeTasks), the
// trace of the USENIX ATC 2023 paper "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent" (Weng et al.).
// Out: a Cluster model in which a task asks for a fraction of one GPU, or k whole
// GPUs, plus CPU and memory, optionally of some GPU models; placement policies
// (random-fit, best-fit, GPU packing, FGD as the paper defines it, and gpupool's
// own); the fragmentation figure (free GPU capacity that no expected task shape
// can use, and the largest gang that could start now, per GPU model); and the
// paper's experiment (Run): submit tasks drawn from the trace until the GPUs
// asked for exceed the cluster's, and report at each demand level the share of
// GPU capacity left unallocated; and a replay with time (Replay): the trace's
// arrivals, compressed, and run times on a cut of its cluster, with a queue,
// reporting utilisation, waits, stranded GPU-hours and tasks never started.
// A Meter measures another scheduler's replay of the same input alike: the
// subpackage enginereplay drives the scheduler's own placement over it.
//
// Units: GPU amounts are thousandths of one GPU (milli-GPU: 1000 is a whole GPU),
// CPU is in thousandths of a core (milli-CPU), memory in MiB. The package does no
// I/O beyond the readers it is given; randomness comes only from the seeds it is
// given, so the same calls give the same answers. A Cluster is not safe for
// concurrent use.
package frag
