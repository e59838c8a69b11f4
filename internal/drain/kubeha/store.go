// Package kubeha is facilityd's high availability on Kubernetes: leader
// election on a Lease, the state in a ConfigMap written only with the
// resourceVersion last read (and the leader's epoch), and the journal as
// hash-chained records in ConfigMaps, so that both replicas reach them.
//
// client-go's leader election does not fence: its documentation says it
// does not guarantee that only one client acts as leader. So every
// intent is committed first with a conditional write, and a replica
// whose write is refused stops (drain.ErrFenced); its node patches carry
// the epoch too (internal/scheduler/kubernetes), so a deposed leader's
// late write lands nowhere.
package kubeha

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/seamdc/seam/internal/drain"
)

// Annotations and keys of the state ConfigMap.
const (
	AnnEpoch  = "facilityd.seam.io/epoch"
	AnnLeader = "facilityd.seam.io/leader"
	StateKey  = "state.json.gz"
	// LabelPart labels the ConfigMaps facilityd keeps (state, journal).
	LabelPart = "facilityd.seam.io/part"
)

// Store is the state in a ConfigMap (gzipped JSON in binaryData: a
// ConfigMap holds at most 1 MiB).
type Store struct {
	Client    k8s.Interface
	Namespace string
	Name      string // default facilityd-state
	// Leader and Epoch are this replica's identity and its Lease's
	// transitions when it became leader.
	Leader  string
	Epoch   int64
	Timeout time.Duration // per call (default 30 s)

	mu sync.Mutex
	rv string // the resourceVersion last read or written
}

func (s *Store) name() string {
	if s.Name == "" {
		return "facilityd-state"
	}
	return s.Name
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	t := s.Timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	return context.WithTimeout(context.Background(), t)
}

// Claim reads the state (an empty one for site when there is none yet)
// and writes it back at once with this replica's epoch: from then on a
// replica with an older epoch can write it no more. A state written by a
// newer epoch is drain.ErrFenced.
func (s *Store) Claim(ctx context.Context, site string) (*drain.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	cm, err := cms.Get(ctx, s.name(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		st := drain.NewState(site)
		cm, err = s.encode(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.name(), Namespace: s.Namespace, Labels: map[string]string{LabelPart: "state"}}}, st)
		if err != nil {
			return nil, err
		}
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: "facilityd"})
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("configmap %s/%s: created by another replica meanwhile: %w", s.Namespace, s.name(), drain.ErrFenced)
		}
		if err != nil {
			return nil, fmt.Errorf("configmap %s/%s: %w", s.Namespace, s.name(), err)
		}
		s.rv = created.ResourceVersion
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", s.Namespace, s.name(), err)
	}
	if e, err := strconv.ParseInt(cm.Annotations[AnnEpoch], 10, 64); err == nil && e > s.Epoch {
		return nil, fmt.Errorf("configmap %s/%s carries epoch %d of %s, newer than this replica's %d: %w", s.Namespace, s.name(), e, cm.Annotations[AnnLeader], s.Epoch, drain.ErrFenced)
	}
	st, err := decode(cm, site)
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", s.Namespace, s.name(), err)
	}
	s.rv = cm.ResourceVersion
	if err := s.save(ctx, cm, st); err != nil {
		return nil, err
	}
	return st, nil
}

// Save writes the state with the resourceVersion last seen: if anyone
// wrote it since (a newer leader's claim), the API server refuses it
// and Save returns drain.ErrFenced.
func (s *Store) Save(st *drain.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := s.ctx()
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.name(), Namespace: s.Namespace, Labels: map[string]string{LabelPart: "state"}}}
	return s.save(ctx, cm, st)
}

func (s *Store) save(ctx context.Context, cm *corev1.ConfigMap, st *drain.State) error {
	if s.rv == "" {
		return fmt.Errorf("configmap %s/%s: not claimed: %w", s.Namespace, s.name(), drain.ErrFenced)
	}
	cm, err := s.encode(cm.DeepCopy(), st)
	if err != nil {
		return err
	}
	cm.ResourceVersion = s.rv
	out, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "facilityd"})
	switch {
	case apierrors.IsConflict(err):
		s.rv = "" // never again: a newer leader owns it
		return fmt.Errorf("configmap %s/%s changed since epoch %d read it: %w", s.Namespace, s.name(), s.Epoch, drain.ErrFenced)
	case err != nil:
		return fmt.Errorf("configmap %s/%s: %w", s.Namespace, s.name(), err)
	}
	s.rv = out.ResourceVersion
	return nil
}

func (s *Store) encode(cm *corev1.ConfigMap, st *drain.State) (*corev1.ConfigMap, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("facilityd state: %w", err)
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write(b)
	if err := w.Close(); err != nil {
		return nil, err
	}
	if z.Len() > 900<<10 {
		return nil, fmt.Errorf("facilityd state of %d bytes gzipped: above what a ConfigMap holds (1 MiB)", z.Len())
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[AnnEpoch] = strconv.FormatInt(s.Epoch, 10)
	cm.Annotations[AnnLeader] = s.Leader
	cm.BinaryData = map[string][]byte{StateKey: z.Bytes()}
	cm.Data = nil
	return cm, nil
}

func decode(cm *corev1.ConfigMap, site string) (*drain.State, error) {
	z, ok := cm.BinaryData[StateKey]
	if !ok {
		return drain.NewState(site), nil
	}
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", StateKey, err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", StateKey, err)
	}
	return drain.DecodeState(StateKey, b, site)
}

// Load reads the state as it is (status, tests), without claiming it.
func Load(ctx context.Context, c k8s.Interface, namespace, name, site string) (*drain.State, int64, error) {
	cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, 0, err
	}
	e, _ := strconv.ParseInt(cm.Annotations[AnnEpoch], 10, 64)
	st, err := decode(cm, site)
	return st, e, err
}
