package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	_ "net/http/pprof" // -pprof: the proxy's profiles, on the address given as the gateway's pprof_addr
	"os"
	"regexp"
	"strings"
)

// The bare proxy: what the standard library alone costs as a gateway. Given as -bin proxy, benche2e runs itself
// in the gateway's place, speaking the command line the measurement uses (--config FILE migrate | keys create |
// credits add | serve): serve relays each call to the configured provider with net/http's server and client,
// the model's id swapped for its upstream name, the upstream's key set, and the answer copied back with a flush
// after every read. No authentication, limits, records or billing: the floor under the gateway's figures.
var (
	proxyAddr   = regexp.MustCompile(`server: \{addr: "([^"]+)"`)
	proxyPprof  = regexp.MustCompile(`pprof_addr: "([^"]+)"`)
	proxyBase   = regexp.MustCompile(`base_url: (\S+), api_key: (\S+)\}`)
	proxyModels = regexp.MustCompile(`id: (\S+), modality: .*upstream_model: ([^,]+),`)
)

func runProxy(cfgPath string, args []string) {
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case len(args) == 0:
		log.Fatal("proxy: no command")
	case args[0] == "keys":
		fmt.Println("sk-proxy") // the proxy checks no key
		return
	case args[0] != "serve":
		return // migrate, credits: nothing to keep
	}
	addr, base := proxyAddr.FindSubmatch(cfg), proxyBase.FindSubmatch(cfg)
	if addr == nil || base == nil {
		log.Fatalf("proxy: no server address or provider in %s", cfgPath)
	}
	var swaps [][2][]byte
	for _, m := range proxyModels.FindAllSubmatch(cfg, -1) {
		swaps = append(swaps, [2][]byte{[]byte(`"model":"` + string(m[1]) + `"`), []byte(`"model":"` + string(m[2]) + `"`)})
	}
	upstream, auth := string(base[1]), "Bearer "+string(base[2])
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, ReadBufferSize: 16 << 10}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("POST /api/v1/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		for _, s := range swaps {
			body = bytes.Replace(body, s[0], s[1], 1)
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, upstream+strings.TrimPrefix(r.URL.Path, "/api/v1"), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		buf, fl := make([]byte, 16<<10), w.(http.Flusher)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				fl.Flush()
			}
			if err != nil {
				return
			}
		}
	})
	// Profiles of the floor, as of the gateway (-pprof): the same endpoints on the address the gateway would use.
	if m := proxyPprof.FindSubmatch(cfg); m != nil {
		go func() { log.Print(http.ListenAndServe(string(m[1]), nil)) }()
	}
	// As the gateway's listener: HTTP/1.1 and h2c (the -h2c phase).
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Addr: string(addr[1]), Handler: mux, Protocols: &protocols}
	log.Fatal(srv.ListenAndServe())
}
