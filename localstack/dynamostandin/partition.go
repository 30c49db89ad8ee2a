package main

import (
	"bytes"
	"encoding/base64"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// A query names one partition: its key condition is the partition key's
// equality, and at most one condition on the sort key. The stand-in reads
// that partition only (members.go), and answers base-table queries so
// too, instead of minidyn, whose Query evaluates the key condition over
// every item of the table. Anything else — a legacy parameter, a nested
// projection, a Select other than COUNT, a key condition of another shape
// — is left to minidyn (base table) or evaluated over the whole index, as
// before, so no request is answered less strictly than it was.

var (
	keyEquality     = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)
	keyEqualityBack = regexp.MustCompile(`(:[A-Za-z0-9_]+)\s*=\s*(#?[A-Za-z0-9_]+)`)
	placeholder     = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)
	identifier      = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// simpleKeyCondition reports whether in's key condition names only the
// key attributes hash and rng, in at most two terms joined by AND, with
// no OR, NOT, IN or function other than begins_with.
func simpleKeyCondition(in queryInput, hash, rng string) bool {
	cond := in.KeyConditionExpression
	if cond == "" {
		return false
	}
	for _, p := range namePlaceholder.FindAllString(cond, -1) {
		if n := in.ExpressionAttributeNames[p]; n == "" || (n != hash && (rng == "" || n != rng)) {
			return false
		}
	}
	ands, betweens := 0, 0
	for _, w := range identifier.FindAllString(placeholder.ReplaceAllString(cond, " "), -1) {
		switch {
		case strings.EqualFold(w, "AND"):
			ands++
		case strings.EqualFold(w, "BETWEEN"):
			betweens++
		case w == "begins_with":
		case w == hash || (rng != "" && w == rng):
		default:
			return false
		}
	}
	return betweens <= 1 && ands-betweens <= 1
}

// partitionValue is the value in's key condition sets the partition key
// hash to, if it is a simple key condition (simpleKeyCondition).
func partitionValue(in queryInput, hash, rng string) ([]byte, bool) {
	if !simpleKeyCondition(in, hash, rng) {
		return nil, false
	}
	resolve := func(name string) string {
		if strings.HasPrefix(name, "#") {
			return in.ExpressionAttributeNames[name]
		}
		return name
	}
	for _, m := range keyEquality.FindAllStringSubmatch(in.KeyConditionExpression, -1) {
		if resolve(m[1]) == hash {
			v, ok := in.ExpressionAttributeValues[m[2]]
			return v, ok
		}
	}
	for _, m := range keyEqualityBack.FindAllStringSubmatch(in.KeyConditionExpression, -1) {
		if resolve(m[2]) == hash {
			v, ok := in.ExpressionAttributeValues[m[1]]
			return v, ok
		}
	}
	return nil, false
}

// answersBaseQuery reports whether the stand-in answers in, a query of
// the base table whose keys are hash and rng, itself.
func answersBaseQuery(in queryInput, hash, rng string) bool {
	if len(in.KeyConditions) > 0 || len(in.QueryFilter) > 0 || len(in.AttributesToGet) > 0 ||
		strings.ContainsAny(in.ProjectionExpression, ".[") ||
		!(in.Select == "" || in.Select == "COUNT" && in.ProjectionExpression == "") {
		return false
	}
	_, ok := partitionValue(in, hash, rng)
	return ok
}

// sortAfter orders items by the key attributes order, ascending if
// forward, and drops those at or before start (an ExclusiveStartKey, if
// not empty). Each item's key values are parsed once: compareValue's
// order, at a cost that follows the partition.
func sortAfter(items []item, order []string, forward bool, start item) []item {
	type keyed struct {
		it   item
		keys []keyValue
	}
	ks := make([]keyed, len(items))
	for i, it := range items {
		ks[i] = keyed{it, parseKeys(it, order)}
	}
	dir := 1
	if !forward {
		dir = -1
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return dir * compareKeys(a.keys, b.keys) })
	from := 0
	if len(start) > 0 {
		sk := parseKeys(start, order)
		from = len(ks)
		for i, k := range ks {
			if dir*compareKeys(k.keys, sk) > 0 {
				from = i
				break
			}
		}
	}
	out := make([]item, 0, len(ks)-from)
	for _, k := range ks[from:] {
		out = append(out, k.it)
	}
	return out
}

// keyValue is a key attribute's value parsed for ordering.
type keyValue struct {
	typ, val string
	num      *big.Float // N, when it parses
	bin      []byte     // B, when it decodes
}

func parseKeys(it item, order []string) []keyValue {
	out := make([]keyValue, len(order))
	for i, k := range order {
		t, v := scalar(it[k])
		out[i] = keyValue{typ: t, val: v}
		switch t {
		case "N":
			if f, ok := new(big.Float).SetString(v); ok {
				out[i].num = f
			}
		case "B":
			if b, err := base64.StdEncoding.DecodeString(v); err == nil {
				out[i].bin = b
			}
		}
	}
	return out
}

// compareKeys orders two parsed key tuples as DynamoDB orders sort keys:
// strings and binaries by bytes, numbers by value.
func compareKeys(a, b []keyValue) int {
	for i := range a {
		x, y := a[i], b[i]
		var c int
		switch {
		case x.typ != y.typ:
			c = strings.Compare(x.typ, y.typ)
		case x.typ == "N" && x.num != nil && y.num != nil:
			c = x.num.Cmp(y.num)
		case x.typ == "B" && x.bin != nil && y.bin != nil:
			c = bytes.Compare(x.bin, y.bin)
		default:
			c = strings.Compare(x.val, y.val)
		}
		if c != 0 {
			return c
		}
	}
	return 0
}
