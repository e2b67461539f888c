package e2e

// Queries to the Prometheus of the prometheus-operator add-on
// (hack/kind/addon-prometheus-operator.sh), through the API server's service
// proxy.

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// promAPI GETs a path of Prometheus's HTTP API and returns its data, or an
// error naming what Prometheus said (a query that does not parse or fails
// to evaluate is an error).
func promAPI(path string, params url.Values) (json.RawMessage, error) {
	p := "/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/" + path
	if len(params) > 0 {
		p += "?" + params.Encode()
	}
	out, err := kubectl(30*time.Second, "get", "--raw", p)
	var r struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	// A failed query is an HTTP 400/422 whose body still says why.
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil {
		if err != nil {
			return nil, fmt.Errorf("%v: %s", err, out)
		}
		return nil, fmt.Errorf("%s: %v: %s", path, jerr, out)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s: %s", path, r.ErrorType, r.Error)
	}
	return r.Data, nil
}

// promSample is one series of an instant query's result.
type promSample struct {
	Metric map[string]string
	Value  float64
}

// promInstant evaluates q now; a scalar result is one sample without labels.
func promInstant(q string) ([]promSample, error) {
	data, err := promAPI("query", url.Values{"query": {q}})
	if err != nil {
		return nil, err
	}
	var r struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	value := func(v [2]any) float64 {
		f, _ := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
		return f
	}
	switch r.ResultType {
	case "vector":
		var vs []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(r.Result, &vs); err != nil {
			return nil, err
		}
		out := make([]promSample, len(vs))
		for i, v := range vs {
			out[i] = promSample{v.Metric, value(v.Value)}
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(r.Result, &v); err != nil {
			return nil, err
		}
		return []promSample{{map[string]string{}, value(v)}}, nil
	}
	return nil, fmt.Errorf("query %s: result of type %s", q, r.ResultType)
}

// promQuery evaluates q now and returns the value of each series by its
// pod label.
func promQuery(q string) (map[string]float64, error) {
	s, err := promInstant(q)
	if err != nil {
		return nil, err
	}
	res := map[string]float64{}
	for _, v := range s {
		res[v.Metric["pod"]] = v.Value
	}
	return res, nil
}

// promTarget is an active scrape target.
type promTarget struct {
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
	Labels     map[string]string `json:"labels"`
}

func promTargets() ([]promTarget, error) {
	data, err := promAPI("targets", url.Values{"state": {"active"}})
	if err != nil {
		return nil, err
	}
	var r struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	return r.ActiveTargets, json.Unmarshal(data, &r)
}

// promRule is an alerting rule as Prometheus loaded and last evaluated it.
type promRule struct {
	Name           string    `json:"name"`
	Query          string    `json:"query"`
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
	State          string    `json:"state"`
}

// promAlertRules lists the alerting rules by name (the file of each group
// names the PrometheusRule it came from: namespace-name-uid.yaml).
func promAlertRules() (map[string]promRule, error) {
	data, err := promAPI("rules", url.Values{"type": {"alert"}})
	if err != nil {
		return nil, err
	}
	var r struct {
		Groups []struct {
			File  string     `json:"file"`
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	out := map[string]promRule{}
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			out[rule.Name] = rule
		}
	}
	return out, nil
}

// promAlert is a pending or firing alert.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

func promAlerts() ([]promAlert, error) {
	data, err := promAPI("alerts", nil)
	if err != nil {
		return nil, err
	}
	var r struct {
		Alerts []promAlert `json:"alerts"`
	}
	return r.Alerts, json.Unmarshal(data, &r)
}
