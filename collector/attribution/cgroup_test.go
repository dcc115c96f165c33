package attribution

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	uidA   = "8d2f3e1a-7b4c-4e5f-9a0b-1c2d3e4f5a6b"
	uidAus = "8d2f3e1a_7b4c_4e5f_9a0b_1c2d3e4f5a6b"
	cid    = "4f7a9c1e2b3d4f7a9c1e2b3d4f7a9c1e2b3d4f7a9c1e2b3d4f7a9c1e2b3d4f7a"
)

var cgroupCases = []struct {
	name string
	in   string
	want cgroupInfo
}{
	{"systemd containerd burstable", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidAus + ".slice/cri-containerd-" + cid + ".scope\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosBurstable, Runtime: "containerd", ContainerID: cid, JobPath: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidAus + ".slice"}},
	{"systemd crio besteffort", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidAus + ".slice/crio-" + cid + ".scope\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosBestEffort, Runtime: "crio", ContainerID: cid, JobPath: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidAus + ".slice"}},
	{"systemd crio conmon", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidAus + ".slice/crio-conmon-" + cid + ".scope\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosBestEffort, Runtime: "crio", ContainerID: cid, JobPath: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidAus + ".slice"}},
	{"systemd docker guaranteed", "0::/kubepods.slice/kubepods-pod" + uidAus + ".slice/docker-" + cid + ".scope\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosGuaranteed, Runtime: "docker", ContainerID: cid, JobPath: "/kubepods.slice/kubepods-pod" + uidAus + ".slice"}},
	{"systemd pod slice itself", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidAus + ".slice\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosBurstable, JobPath: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidAus + ".slice"}},
	{"systemd kind nested", "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidAus + ".slice/cri-containerd-" + cid + ".scope\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosBestEffort, Runtime: "containerd", ContainerID: cid, JobPath: "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidAus + ".slice"}},
	{"systemd seen through a cgroup namespace", "0::/../../kubepods-burstable-pod" + uidAus + ".slice/cri-containerd-" + cid + ".scope\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosBurstable, Runtime: "containerd", ContainerID: cid}},
	{"cgroupfs burstable v1", "11:memory:/kubepods/burstable/pod" + uidA + "/" + cid + "\n1:name=systemd:/kubepods/burstable/pod" + uidA + "/" + cid + "\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosBurstable, ContainerID: cid, JobPath: "/kubepods/burstable/pod" + uidA}},
	{"cgroupfs besteffort crio", "0::/kubepods/besteffort/pod" + uidA + "/crio-" + cid + "\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosBestEffort, Runtime: "crio", ContainerID: cid, JobPath: "/kubepods/besteffort/pod" + uidA}},
	{"cgroupfs guaranteed", "4:devices:/kubepods/pod" + uidA + "/" + cid + "\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosGuaranteed, ContainerID: cid, JobPath: "/kubepods/pod" + uidA}},
	{"cgroupfs static pod uid", "0::/kubepods/burstable/pod6d9a9e4b5bd2dd2e08d1bde4b2c5d6e7/" + cid + "\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: "6d9a9e4b5bd2dd2e08d1bde4b2c5d6e7", QoS: qosBurstable, ContainerID: cid, JobPath: "/kubepods/burstable/pod6d9a9e4b5bd2dd2e08d1bde4b2c5d6e7"}},
	{"hybrid: v1 session, v2 pod", "1:name=systemd:/user.slice/user-0.slice/session-1.scope\n0::/kubepods/pod" + uidA + "/" + cid + "\n",
		cgroupInfo{Kind: cgroupKubernetes, PodUID: uidA, QoS: qosGuaranteed, ContainerID: cid, JobPath: "/kubepods/pod" + uidA}},
	{"not a pod uid", "0::/kubepods/burstable/podnot-a-uid/" + cid + "\n", cgroupInfo{Kind: cgroupOther}},
	{"systemd slice with a bad uid", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice\n", cgroupInfo{Kind: cgroupOther}},
	{"docker cgroupfs", "12:pids:/docker/" + cid + "\n", cgroupInfo{Kind: cgroupContainer, Runtime: "docker", ContainerID: cid}},
	{"docker systemd", "0::/system.slice/docker-" + cid + ".scope\n", cgroupInfo{Kind: cgroupContainer, Runtime: "docker", ContainerID: cid}},
	{"podman", "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + cid + ".scope\n",
		cgroupInfo{Kind: cgroupContainer, Runtime: "podman", ContainerID: cid}},
	{"docker daemon itself", "0::/system.slice/docker.service\n", cgroupInfo{Kind: cgroupOther}},
	{"slurm v1", "7:memory:/slurm/uid_1000/job_4242/step_0/task_0\n1:name=systemd:/system.slice/slurmd.service\n",
		cgroupInfo{Kind: cgroupSlurm, SlurmJobID: "4242", SlurmStep: "0", SlurmUID: "1000", JobPath: "/slurm/uid_1000/job_4242"}},
	{"slurm v1 several slurmd", "7:memory:/slurm_node17/uid_1000/job_4243/step_batch/task_0\n",
		cgroupInfo{Kind: cgroupSlurm, SlurmJobID: "4243", SlurmStep: "batch", SlurmUID: "1000", JobPath: "/slurm_node17/uid_1000/job_4243"}},
	{"slurm v2 slurmstepd", "0::/system.slice/slurmstepd.scope/job_5151/step_0/user/task_0\n",
		cgroupInfo{Kind: cgroupSlurm, SlurmJobID: "5151", SlurmStep: "0", JobPath: "/system.slice/slurmstepd.scope/job_5151"}},
	{"slurm v2 extern step", "0::/system.slice/slurmstepd.scope/job_5151/step_extern/slurm_processes\n",
		cgroupInfo{Kind: cgroupSlurm, SlurmJobID: "5151", SlurmStep: "extern", JobPath: "/system.slice/slurmstepd.scope/job_5151"}},
	{"slurm v2 several slurmd", "0::/system.slice/node17_slurmstepd.scope/job_77/step_interactive/user/task_special\n",
		cgroupInfo{Kind: cgroupSlurm, SlurmJobID: "77", SlurmStep: "interactive", JobPath: "/system.slice/node17_slurmstepd.scope/job_77"}},
	{"slurmstepd's own cgroup", "0::/system.slice/slurmstepd.scope/system\n", cgroupInfo{Kind: cgroupOther}},
	{"job_ outside slurm", "0::/system.slice/job_123.service\n", cgroupInfo{Kind: cgroupOther}},
	{"user slice", "0::/user.slice/user-1000.slice/session-3.scope\n", cgroupInfo{Kind: cgroupOther}},
	{"root", "0::/\n", cgroupInfo{Kind: cgroupOther}},
	{"colon in the path", "0::/system.slice/a:b.service\n", cgroupInfo{Kind: cgroupOther}},
}

func TestParseCgroup(t *testing.T) {
	for _, tt := range cgroupCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCgroup([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			checkCgroupInfo(t, []byte(tt.in), got)
			got.Path = "" // checked by checkCgroupInfo
			if got != tt.want {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseCgroupErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"\n\n",
		"this is not a cgroup file\n",
		"x::/a\n",
		"0::relative/path\n",
		"0:/no-second-colon\n",
		"0::\n",
		"0::/ok\ngarbage\n",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := parseCgroup([]byte(in))
			if !errors.Is(err, ErrBadCgroup) {
				t.Fatalf("err = %v, want ErrBadCgroup", err)
			}
			if got != (cgroupInfo{}) {
				t.Errorf("got %+v with the error, want zero", got)
			}
		})
	}
}

func TestParseCgroupFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/proc/*/cgroup")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	want := map[string]cgroupKind{
		"1001": cgroupKubernetes, "1002": cgroupKubernetes, "1003": cgroupKubernetes, "1004": cgroupKubernetes,
		"1005": cgroupKubernetes, "1006": cgroupContainer, "1007": cgroupContainer, "1008": cgroupSlurm,
		"1009": cgroupSlurm, "1010": cgroupSlurm, "1011": cgroupOther, "1012": cgroupOther, "1013": cgroupOther,
		"1014": cgroupOther, "1015": cgroupOther, "1017": cgroupKubernetes, "1018": cgroupSlurm,
		"1019": cgroupKubernetes,
	}
	for _, f := range files {
		pid := filepath.Base(filepath.Dir(f))
		t.Run(pid, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseCgroup(b)
			if pid == "1016" {
				if !errors.Is(err, ErrBadCgroup) {
					t.Fatalf("err = %v, want ErrBadCgroup", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k, ok := want[pid]; !ok || got.Kind != k {
				t.Errorf("kind %v, want %v (listed: %v)", got.Kind, k, ok)
			}
			checkCgroupInfo(t, b, got)
		})
	}
}

// checkCgroupInfo checks what parseCgroup returned for in against the invariants
// callers rely on.
func checkCgroupInfo(t *testing.T, in []byte, got cgroupInfo) {
	t.Helper()
	if !strings.Contains(string(in), got.Path) || !strings.HasPrefix(got.Path, "/") {
		t.Errorf("path %q is not an absolute path from the input", got.Path)
	}
	switch got.Kind {
	case cgroupKubernetes:
		if !validPodUID(got.PodUID) || strings.Contains(got.PodUID, "_") {
			t.Errorf("kubernetes with pod uid %q", got.PodUID)
		}
		if got.QoS != qosGuaranteed && got.QoS != qosBurstable && got.QoS != qosBestEffort {
			t.Errorf("qos %q", got.QoS)
		}
		if got.SlurmJobID != "" {
			t.Errorf("kubernetes with slurm job %q", got.SlurmJobID)
		}
	case cgroupSlurm:
		if !isDigits(got.SlurmJobID) {
			t.Errorf("slurm with job id %q", got.SlurmJobID)
		}
		if got.SlurmStep != "" && !isStepName(got.SlurmStep) {
			t.Errorf("slurm step %q", got.SlurmStep)
		}
		if got.SlurmUID != "" && !isDigits(got.SlurmUID) {
			t.Errorf("slurm uid %q", got.SlurmUID)
		}
		if got.PodUID != "" || got.ContainerID != "" {
			t.Errorf("slurm with pod %q container %q", got.PodUID, got.ContainerID)
		}
	case cgroupContainer:
		if got.ContainerID == "" || got.PodUID != "" || got.SlurmJobID != "" {
			t.Errorf("container %+v", got)
		}
	case cgroupOther:
		if got.PodUID != "" || got.ContainerID != "" || got.SlurmJobID != "" || got.Runtime != "" {
			t.Errorf("other with ids: %+v", got)
		}
	default:
		t.Errorf("unknown kind %d", got.Kind)
	}
	if got.ContainerID != "" && !validContainerID(got.ContainerID) {
		t.Errorf("container id %q", got.ContainerID)
	}
	if got.Kind != cgroupKubernetes && got.QoS != "" {
		t.Errorf("qos %q outside kubernetes", got.QoS)
	}
}

func FuzzParseCgroup(f *testing.F) {
	files, _ := filepath.Glob("testdata/proc/*/cgroup")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, c := range cgroupCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := parseCgroup(in)
		if err != nil {
			if !errors.Is(err, ErrBadCgroup) || got != (cgroupInfo{}) {
				t.Fatalf("error %v with %+v", err, got)
			}
			return
		}
		checkCgroupInfo(t, in, got)
	})
}
