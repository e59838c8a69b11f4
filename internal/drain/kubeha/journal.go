package kubeha

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/seamdc/seam/internal/drain"
)

// Journal is facilityd's journal in the API server: one chain per
// leader epoch, in ConfigMaps named <prefix>-<epoch>-<part> (a new part
// past 512 KiB), one key per record (000001.json …). Each record holds
// the SHA-256 of the one before, so an edited or missing record breaks
// the chain (VerifyJournal). Every append is an update with the
// resourceVersion last written: a journal someone else wrote is refused,
// as drain.ErrFenced.
type Journal struct {
	Client    k8s.Interface
	Namespace string
	Prefix    string // default facilityd-journal
	Leader    string
	Epoch     int64
	Now       func() time.Time
	Timeout   time.Duration

	mu   sync.Mutex
	seq  int
	prev string
	part int
	size int
	cm   *corev1.ConfigMap
}

// JournalRecord is one record as stored.
type JournalRecord struct {
	Seq    int             `json:"seq"`
	At     time.Time       `json:"at"`
	Leader string          `json:"leader"`
	Epoch  int64           `json:"epoch"`
	Kind   string          `json:"kind"`
	Data   json.RawMessage `json:"data"`
	Prev   string          `json:"prev"`
}

const partLimit = 512 << 10

func (j *Journal) prefix() string {
	if j.Prefix == "" {
		return "facilityd-journal"
	}
	return j.Prefix
}

// Record appends a record and writes it before returning.
func (j *Journal) Record(kind string, data any) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	now := time.Now
	if j.Now != nil {
		now = j.Now
	}
	rec := JournalRecord{Seq: j.seq + 1, At: now().UTC(), Leader: j.Leader, Epoch: j.Epoch, Kind: kind, Data: raw, Prev: j.prev}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	t := j.Timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), t)
	defer cancel()
	if j.cm == nil || j.size+len(b) > partLimit {
		if err := j.startPart(ctx); err != nil {
			return err
		}
	}
	cm := j.cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[fmt.Sprintf("%06d.json", rec.Seq)] = string(b)
	out, err := j.Client.CoreV1().ConfigMaps(j.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "facilityd"})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("journal %s/%s was written by someone else: %w", j.Namespace, cm.Name, drain.ErrFenced)
	}
	if err != nil {
		return fmt.Errorf("journal %s/%s: %w", j.Namespace, cm.Name, err)
	}
	j.cm, j.seq, j.size = out, rec.Seq, j.size+len(b)
	sum := sha256.Sum256(b)
	j.prev = hex.EncodeToString(sum[:])
	return nil
}

func (j *Journal) startPart(ctx context.Context) error {
	j.part++
	name := fmt.Sprintf("%s-%d-%d", j.prefix(), j.Epoch, j.part)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: j.Namespace,
		Labels:      map[string]string{LabelPart: "journal", "facilityd.seam.io/epoch": strconv.FormatInt(j.Epoch, 10)},
		Annotations: map[string]string{AnnLeader: j.Leader, AnnEpoch: strconv.FormatInt(j.Epoch, 10), "facilityd.seam.io/first-seq": strconv.Itoa(j.seq + 1), "facilityd.seam.io/prev": j.prev}}}
	out, err := j.Client.CoreV1().ConfigMaps(j.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: "facilityd"})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("journal %s/%s exists already: another replica has epoch %d: %w", j.Namespace, name, j.Epoch, drain.ErrFenced)
	}
	if err != nil {
		return fmt.Errorf("journal %s/%s: %w", j.Namespace, name, err)
	}
	j.cm, j.size = out, 0
	return nil
}

// VerifyJournal reads every journal ConfigMap of namespace and checks
// each epoch's chain: sequence numbers without gaps, each record's prev
// the hash of the one before. It returns the records per epoch.
func VerifyJournal(ctx context.Context, c k8s.Interface, namespace string) (map[int64][]JournalRecord, error) {
	list, err := c.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelPart + "=journal"})
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	type raw struct {
		rec JournalRecord
		b   string
		at  string
	}
	byEpoch := map[int64][]raw{}
	for _, cm := range list.Items {
		for k, v := range cm.Data {
			var r JournalRecord
			if err := json.Unmarshal([]byte(v), &r); err != nil {
				return nil, fmt.Errorf("journal %s/%s key %s: %w", namespace, cm.Name, k, err)
			}
			byEpoch[r.Epoch] = append(byEpoch[r.Epoch], raw{r, v, cm.Name + "/" + k})
		}
	}
	out := map[int64][]JournalRecord{}
	var bad []string
	for e, rs := range byEpoch {
		slices.SortFunc(rs, func(a, b raw) int { return a.rec.Seq - b.rec.Seq })
		prev := ""
		for i, r := range rs {
			if r.rec.Seq != i+1 {
				bad = append(bad, fmt.Sprintf("epoch %d: %s has seq %d, want %d", e, r.at, r.rec.Seq, i+1))
				break
			}
			if r.rec.Prev != prev {
				bad = append(bad, fmt.Sprintf("epoch %d: %s does not chain to the record before", e, r.at))
				break
			}
			sum := sha256.Sum256([]byte(r.b))
			prev = hex.EncodeToString(sum[:])
			out[e] = append(out[e], r.rec)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return out, fmt.Errorf("journal does not verify: %s", strings.Join(bad, "; "))
	}
	return out, nil
}
