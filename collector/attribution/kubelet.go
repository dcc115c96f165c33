package attribution

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxPodListBytes bounds the kubelet's answer (a node's PodList is typically well
// under a few MB even with hundreds of pods).
const maxPodListBytes = 128 << 20

// podMeta is what attribution keeps of one pod from the kubelet's pod list.
type podMeta struct {
	UID       string
	Name      string
	Namespace string
	// Labels are the pod's labels; shared with every JobInfo of the pod, so never
	// modified after the list is decoded.
	Labels map[string]string
	// StartMs is status.startTime (when the kubelet accepted the pod), else
	// metadata.creationTimestamp, in ms since the epoch; 0 if neither is known.
	StartMs int64
	// Annotations are the pod's annotations (never modified after decoding).
	Annotations map[string]string
	// PodIP is status.podIP, where the pod's metrics endpoint answers.
	PodIP string
	// EndReason is why a container of the pod last terminated
	// (status.containerStatuses[].state.terminated.reason, else lastState's):
	// OOMKilled when any container says so, else the first reason found.
	EndReason string
	// Phase is status.phase (Pending, Running, Succeeded, Failed, Unknown).
	Phase string
	// ExitCode is the exit code of the container that ended the pod: the first
	// non-zero one of the containers' terminations, else 0.
	ExitCode int32
}

// termination is the part of a v1 ContainerStateTerminated that attribution reads.
type termination struct {
	Reason   string `json:"reason"`
	ExitCode int32  `json:"exitCode"`
}

// containerStatus is the part of a v1 ContainerStatus that attribution reads.
type containerStatus struct {
	State struct {
		Terminated *termination `json:"terminated"`
	} `json:"state"`
	LastState struct {
		Terminated *termination `json:"terminated"`
	} `json:"lastState"`
}

// podEndReason picks a pod's end reason from its containers' statuses: a
// container's current termination before its last one, and OOMKilled, the
// evidence job_failures reads, before any other.
func podEndReason(statuses []containerStatus) string {
	first := ""
	for _, c := range statuses {
		for _, t := range [...]*termination{c.State.Terminated, c.LastState.Terminated} {
			if t == nil || t.Reason == "" {
				continue
			}
			if t.Reason == "OOMKilled" {
				return t.Reason
			}
			if first == "" {
				first = t.Reason
			}
		}
	}
	return first
}

// podExitCode is the first non-zero exit code of the containers' current
// terminations, else 0.
func podExitCode(statuses []containerStatus) int32 {
	for _, c := range statuses {
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
			return t.ExitCode
		}
	}
	return 0
}

// podList is the part of a v1 PodList that attribution reads.
type podList struct {
	Items []struct {
		Metadata struct {
			UID               string            `json:"uid"`
			Name              string            `json:"name"`
			Namespace         string            `json:"namespace"`
			Labels            map[string]string `json:"labels"`
			Annotations       map[string]string `json:"annotations"`
			CreationTimestamp string            `json:"creationTimestamp"`
		} `json:"metadata"`
		Status struct {
			Phase             string            `json:"phase"`
			StartTime         string            `json:"startTime"`
			PodIP             string            `json:"podIP"`
			ContainerStatuses []containerStatus `json:"containerStatuses"`
		} `json:"status"`
	} `json:"items"`
}

// kubeletClient fetches and caches the pods the node's kubelet runs.
type kubeletClient struct {
	podsURL    string
	tokenFile  string
	client     *http.Client
	ttl        time.Duration
	minRefresh time.Duration
	now        func() time.Time
	log        *slog.Logger

	fetches, failures atomic.Uint64

	// mu guards the cache and serialises fetches, so that many processes of a new
	// pod cause one request.
	mu        sync.Mutex
	pods      map[string]*podMeta
	fetchedAt time.Time // last successful fetch
	triedAt   time.Time // last attempt
	lastErr   error     // error of the last attempt, nil if it succeeded
}

// newKubeletClient returns a client for cfg.KubeletURL; hc, when not nil, replaces
// the HTTP client built from the TLS settings.
func newKubeletClient(cfg Config, hc *http.Client, now func() time.Time, log *slog.Logger) (*kubeletClient, error) {
	if hc == nil {
		// Kubelet serving certificates are often self-signed; skipping verification
		// is the operator's explicit choice.
		tlsCfg := &tls.Config{InsecureSkipVerify: cfg.KubeletInsecureSkipVerify}
		if cfg.KubeletCAFile != "" {
			pem, err := os.ReadFile(cfg.KubeletCAFile)
			if err != nil {
				return nil, fmt.Errorf("kubelet_ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("kubelet_ca_file: %s holds no PEM certificate", cfg.KubeletCAFile)
			}
			tlsCfg.RootCAs = pool
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tlsCfg
		tr.Proxy = nil // the kubelet is local; a proxy from the environment would be wrong
		hc = &http.Client{Transport: tr, Timeout: cfg.KubeletTimeout}
	}
	if cfg.KubeletTokenFile != "" {
		if _, err := os.Stat(cfg.KubeletTokenFile); err != nil {
			return nil, fmt.Errorf("kubelet_token_file: %w", err)
		}
	}
	return &kubeletClient{
		podsURL:    strings.TrimRight(cfg.KubeletURL, "/") + "/pods",
		tokenFile:  cfg.KubeletTokenFile,
		client:     hc,
		ttl:        cfg.CacheTTL,
		minRefresh: cfg.KubeletMinRefresh,
		now:        now,
		log:        log,
	}, nil
}

// lookup returns the pod with the given UID. It fetches the pod list when the
// cached one is older than the TTL or does not have the pod, but never sooner than
// minRefresh after the previous attempt. It returns (nil, nil) for a pod the
// kubelet does not list, and an error wrapping ErrKubelet when the pod is not in
// the cache and the last fetch failed.
func (k *kubeletClient) lookup(ctx context.Context, uid string) (*podMeta, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	pod, known := k.pods[uid]
	stale := k.pods == nil || now.Sub(k.fetchedAt) >= k.ttl
	if (stale || !known) && (k.triedAt.IsZero() || now.Sub(k.triedAt) >= k.minRefresh) {
		k.triedAt = now
		pods, err := k.fetch(ctx)
		k.lastErr = err
		if err == nil {
			k.pods, k.fetchedAt = pods, now
			pod, known = pods[uid]
		}
	}
	if known {
		return pod, nil
	}
	if k.lastErr != nil {
		return nil, k.lastErr
	}
	return nil, nil
}

// refresh returns the pod with the given UID from a pod list fetched now, unless
// the last attempt was less than minRefresh ago (then from the cache): a pod's
// container statuses change when it ends, long after it was first described.
func (k *kubeletClient) refresh(ctx context.Context, uid string) (*podMeta, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if k.triedAt.IsZero() || now.Sub(k.triedAt) >= k.minRefresh {
		k.triedAt = now
		pods, err := k.fetch(ctx)
		k.lastErr = err
		if err != nil {
			return nil, err
		}
		k.pods, k.fetchedAt = pods, now
	}
	return k.pods[uid], nil
}

// fetch requests and decodes the pod list.
func (k *kubeletClient) fetch(ctx context.Context) (map[string]*podMeta, error) {
	k.fetches.Add(1)
	pods, err := k.get(ctx)
	if err != nil {
		k.failures.Add(1)
		k.log.Warn("kubelet pod list fetch failed", "url", k.podsURL, "err", err)
		return nil, err
	}
	k.log.Debug("kubelet pod list fetched", "pods", len(pods))
	return pods, nil
}

func (k *kubeletClient) get(ctx context.Context) (map[string]*podMeta, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.podsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKubelet, err)
	}
	req.Header.Set("Accept", "application/json")
	if k.tokenFile != "" {
		tok, err := os.ReadFile(k.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("%w: read kubelet_token_file: %v", ErrKubelet, err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", ErrKubelet, k.podsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%w: GET %s: %s%s", ErrKubelet, k.podsURL, resp.Status, statusHint(resp.StatusCode))
	}
	var list podList
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxPodListBytes)).Decode(&list); err != nil {
		return nil, fmt.Errorf("%w: decode pod list from %s: %v", ErrKubelet, k.podsURL, err)
	}
	pods := make(map[string]*podMeta, len(list.Items))
	for _, it := range list.Items {
		m := it.Metadata
		if m.UID == "" {
			continue
		}
		start := parseKubeTime(it.Status.StartTime)
		if start == 0 {
			start = parseKubeTime(m.CreationTimestamp)
		}
		pods[m.UID] = &podMeta{
			UID: m.UID, Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, StartMs: start,
			Annotations: m.Annotations, PodIP: it.Status.PodIP, EndReason: podEndReason(it.Status.ContainerStatuses),
			Phase: it.Status.Phase, ExitCode: podExitCode(it.Status.ContainerStatuses),
		}
	}
	return pods, nil
}

// statusHint says what to do about an HTTP status the kubelet answers.
func statusHint(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return " (the kubelet rejected the token: check kubelet_token_file)"
	case http.StatusForbidden:
		return " (the token's service account needs get on nodes/proxy or nodes/pods)"
	}
	return ""
}

// parseKubeTime parses an RFC 3339 timestamp into ms since the epoch; 0 if empty or
// malformed.
func parseKubeTime(s string) int64 {
	if s == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// stats returns the number of fetches and failed fetches so far.
func (k *kubeletClient) stats() (fetches, failures uint64) {
	return k.fetches.Load(), k.failures.Load()
}
