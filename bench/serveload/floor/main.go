// Command floor is the floor bench/serveload measures `dont serve`
// against: the simplest HTTP server that does a spawn lifecycle's durable
// work on the same SQLite driver with the same pragmas — a plain net/http
// mux, one connection, prepared statements, and per lifecycle the two
// conditional commits the protocol needs (assume: the spawn inserted and
// the entity moved on its version; the callback: the spawn resolved only
// while pending and the entity moved on its version), each with its event.
// With an Idempotency-Key it remembers the response in the same
// transaction and replays it, as dont does. It checks the bearer token
// against a SHA-256 hash and a callback token as an HMAC of the request
// id, in memory. It has no sweep, no rate limit, no tool registry, no
// envelope beyond {"ok","data"}.
//
// Usage: floor <database file> <bearer token>; the first stdout line is
// {"listening":URL}, like `dont serve`'s.
package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	_ "modernc.org/sqlite"
)

const schema = `
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS entities(id TEXT PRIMARY KEY, status TEXT NOT NULL, version INTEGER NOT NULL, doc BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS events(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, entity_id TEXT, request_id TEXT, kind TEXT NOT NULL, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS events_entity ON events(entity_id, seq);
CREATE INDEX IF NOT EXISTS events_request ON events(request_id);
CREATE TABLE IF NOT EXISTS spawns(id TEXT PRIMARY KEY, entity_id TEXT, state TEXT NOT NULL, issued_at TEXT NOT NULL, expires_at TEXT NOT NULL, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS spawns_due ON spawns(expires_at) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS idempotency(key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, body BLOB NOT NULL);
`

type server struct {
	db        *sql.DB
	tokenHash [32]byte
	secret    []byte
	seq       atomic.Int64
	stmts     map[string]*sql.Stmt
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: floor <database file> <bearer token>")
		os.Exit(2)
	}
	// The DSN of internal/store/sqlite: the same pragmas, immediate transactions.
	dsn := "file:" + (&url.URL{Path: os.Args[1]}).EscapedPath() + "?_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	check(err)
	db.SetMaxOpenConns(1)
	_, err = db.Exec(schema)
	check(err)
	s := &server{db: db, tokenHash: sha256.Sum256([]byte(os.Args[2])), secret: make([]byte, 32), stmts: map[string]*sql.Stmt{}}
	rand.Read(s.secret)
	for name, q := range map[string]string{
		"entity":      "SELECT version, doc FROM entities WHERE id = ?",
		"insEntity":   "INSERT INTO entities(id, status, version, doc) VALUES(?,?,?,?)",
		"updEntity":   "UPDATE entities SET status = ?, version = ?, doc = ? WHERE id = ? AND version = ?",
		"insSpawn":    "INSERT INTO spawns(id, entity_id, state, issued_at, expires_at, doc) VALUES(?,?,'pending',?,?,?)",
		"spawnEntity": "SELECT entity_id FROM spawns WHERE id = ?",
		"resolve":     "UPDATE spawns SET state = 'resolved', doc = ? WHERE id = ? AND state = 'pending'",
		"insEvent":    "INSERT INTO events(id, entity_id, request_id, kind, doc) VALUES(?,?,?,?,?)",
		"key":         "SELECT fingerprint, body FROM idempotency WHERE key = ?",
		"insKey":      "INSERT INTO idempotency(key, fingerprint, body) VALUES(?,?,?)",
	} {
		st, err := db.Prepare(q)
		check(err)
		s.stmts[name] = st
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tools/{name}", s.call)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	line, _ := json.Marshal(map[string]string{"listening": "http://" + ln.Addr().String()})
	fmt.Printf("%s\n", line)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		check(err)
	}
}

var errCondition = errors.New("condition failed")

func (s *server) call(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		Args struct {
			ID        string `json:"id"`
			Statement string `json:"statement"`
			RequestID string `json:"request_id"`
		} `json:"args"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	presented := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	name := r.PathValue("name")
	if name == "dismiss" {
		if !hmac.Equal([]byte(presented), []byte(s.callbackToken(req.Args.RequestID))) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	} else if h := sha256.Sum256([]byte(presented)); subtle.ConstantTimeCompare(h[:], s.tokenHash[:]) != 1 {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	sum := sha256.Sum256(body)
	fp := hex.EncodeToString(sum[:])
	tx, err := s.db.BeginTx(r.Context(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if key != "" {
		var stored string
		var old []byte
		if err := tx.Stmt(s.stmts["key"]).QueryRow(name+"/"+key).Scan(&stored, &old); err == nil {
			w.Header().Set("Content-Type", "application/json")
			w.Write(old)
			return
		}
	}
	var data any
	now := time.Now().UTC()
	switch name {
	case "conclude":
		id := s.id("claim")
		doc, _ := json.Marshal(map[string]any{"id": id, "statement": req.Args.Statement, "status": "unverified", "created_at": now})
		_, err = tx.Stmt(s.stmts["insEntity"]).Exec(id, "unverified", 1, doc)
		if err == nil {
			err = s.event(tx, id, "", "conclude", now)
		}
		data = map[string]any{"id": id, "status": "unverified"}
	case "assume":
		rid := s.id("spawn")
		err = s.move(tx, req.Args.ID, "assumed", rid, now)
		if err == nil {
			doc, _ := json.Marshal(map[string]any{"request_id": rid, "entity_id": req.Args.ID, "state": "pending", "issued_at": now, "expires_at": now.Add(24 * time.Hour)})
			_, err = tx.Stmt(s.stmts["insSpawn"]).Exec(rid, req.Args.ID, now.Format(time.RFC3339Nano), now.Add(24*time.Hour).Format(time.RFC3339Nano), doc)
		}
		if err == nil {
			err = s.event(tx, req.Args.ID, rid, "assume", now)
		}
		data = map[string]any{"request_id": rid, "entity_id": req.Args.ID, "callback": map[string]any{"request_id": rid, "token": s.callbackToken(rid)}}
	case "dismiss":
		var entity string
		if err = tx.Stmt(s.stmts["spawnEntity"]).QueryRow(req.Args.RequestID).Scan(&entity); err == nil {
			doc, _ := json.Marshal(map[string]any{"request_id": req.Args.RequestID, "state": "resolved", "outcome": "callback-applied", "resolved_at": now})
			var res sql.Result
			if res, err = tx.Stmt(s.stmts["resolve"]).Exec(doc, req.Args.RequestID); err == nil {
				if n, _ := res.RowsAffected(); n != 1 {
					err = errCondition
				}
			}
		}
		if err == nil {
			err = s.move(tx, entity, "dismissed", "", now)
		}
		if err == nil {
			err = s.event(tx, entity, req.Args.RequestID, "dismiss", now)
		}
		data = map[string]any{"id": entity, "status": "dismissed"}
	default:
		http.Error(w, "no such tool", http.StatusNotFound)
		return
	}
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, errCondition) || errors.Is(err, sql.ErrNoRows) {
			status = http.StatusConflict
		}
		http.Error(w, err.Error(), status)
		return
	}
	out, _ := json.Marshal(map[string]any{"ok": true, "data": data})
	if key != "" {
		if _, err := tx.Stmt(s.stmts["insKey"]).Exec(name+"/"+key, fp, out); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// move is the entity's conditional write: read its version, write the
// next one only if nobody wrote in between.
func (s *server) move(tx *sql.Tx, id, status, pending string, now time.Time) error {
	var version int64
	var raw []byte
	if err := tx.Stmt(s.stmts["entity"]).QueryRow(id).Scan(&version, &raw); err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	doc["status"], doc["pending_spawn"], doc["version"], doc["updated_at"] = status, pending, version+1, now
	out, _ := json.Marshal(doc)
	res, err := tx.Stmt(s.stmts["updEntity"]).Exec(status, version+1, out, id, version)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return errCondition
	}
	return nil
}

func (s *server) event(tx *sql.Tx, entity, request, kind string, now time.Time) error {
	id := s.id("evt")
	doc, _ := json.Marshal(map[string]any{"id": id, "entity_id": entity, "request_id": request, "kind": kind, "at": now})
	_, err := tx.Stmt(s.stmts["insEvent"]).Exec(id, entity, request, kind, doc)
	return err
}

func (s *server) id(kind string) string {
	return fmt.Sprintf("%s:%d-%d", kind, time.Now().UnixNano(), s.seq.Add(1))
}

func (s *server) callbackToken(requestID string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(requestID))
	return hex.EncodeToString(m.Sum(nil))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}
