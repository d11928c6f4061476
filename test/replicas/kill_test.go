package replicas_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/test/contract"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// killDuringBurst sends speech calls to replica 0, 16 at a time, kills it with SIGKILL once 100 have been read
// to the end, and starts it again on its spool: every call whose answer the client read to the end has its
// record, and the key's usage equals the sum of the records' costs. fleetT owns the restarted replica.
func killDuringBurst(t, fleetT *testing.T, f *fleet) {
	k := f.key(t, map[string]any{"name": "burst"})
	var mu sync.Mutex
	var read []string // generation ids of answers read to the end
	broken := 0
	var wg sync.WaitGroup
	killed := make(chan struct{})
	var once sync.Once
	body := `{"model":"speech","input":"` + callText + `","voice":"alloy"}`
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-killed:
					return
				default:
				}
				req, _ := http.NewRequest("POST", f.replicas[0].url+"/api/v1/audio/speech", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+k.secret)
				req.Header.Set("Content-Type", "application/json")
				resp, err := f.client.Do(req)
				if err != nil {
					mu.Lock()
					broken++
					mu.Unlock()
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				if err == nil && resp.StatusCode == http.StatusOK {
					read = append(read, resp.Header.Get("X-Generation-Id"))
				} else {
					broken++
				}
				n := len(read)
				mu.Unlock()
				if n >= 100 {
					once.Do(func() { f.replicas[0].kill(t); close(killed) })
				}
			}
		})
	}
	wg.Wait()
	before := len(read)
	f.restart(fleetT, 0)
	deadline := time.Now().Add(30 * time.Second)
	for spooled(t, f) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the restarted replica's spool did not drain in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	db, closeDB, err := gormstore.Open(t.Context(), gormstore.Config{URL: f.dbURL}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	var stored int64
	db.Raw("SELECT COUNT(*) FROM generations WHERE id IN ?", read).Scan(&stored)
	var sum, usage int64
	db.Raw("SELECT COALESCE(SUM(total_cost_micros), 0) FROM generations WHERE key_hash = ?", k.hash).Scan(&sum)
	db.Raw("SELECT COALESCE(SUM(micros), 0) FROM key_usage WHERE key_hash = ?", k.hash).Scan(&usage)
	t.Logf("MEASURED SIGKILL during a c=16 burst: %d answers read to the end, %d broken or refused around the kill; %d of %d have "+
		"their record after the restart; usage $%.6f, records $%.6f", before, broken, stored, before,
		float64(usage)/1e6, float64(sum)/1e6)
	if int(stored) != before || usage != sum {
		t.Errorf("%d of %d answered calls recorded; usage %d, records %d", stored, before, usage, sum)
	}
	// The activity kept with the records agrees with them: the replay booked it once, as it booked the usage.
	calls, cost := contract.ActivityMatchesRecords(t, gormstore.NewGenerationStore(db), k.hash)
	t.Logf("MEASURED SIGKILL: the key's activity after the replay: %d calls, $%.6f (its records')", calls, float64(cost)/1e6)
}

// TestKillDuringBurstSQLite is the kill -9 case on the embedded SQLite default: one gateway process on its
// database file, killed during a c=16 burst and started again on its spool and its file. (The outage test,
// TestOutageLosesNothing in test/api, cuts PostgreSQL's connection through a TCP proxy: an embedded file has no
// connection to cut, so it does not apply to SQLite.)
func TestKillDuringBurstSQLite(t *testing.T) {
	f := newFleetOn(t, 1, testdb.SQLiteURL(t))
	f.cli(t, "credits", "add", "1000")
	killDuringBurst(t, t, f)
}

// spooled is how many entries replica 0's spool holds, from /readyz.
func spooled(t *testing.T, f *fleet) int64 {
	resp, err := f.client.Get(f.replicas[0].url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ready struct {
		Spool struct{ Records int64 } `json:"spool"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil {
		t.Fatal(err)
	}
	return ready.Spool.Records
}
