//! Ask the running local engine for the context window it was given.
//!
//! A model's trained window is not the window it is served with: Ollama serves 2k-4k tokens by
//! default whatever the model could hold, and a prompt longer than that is cut without an error.
//! So when `- **Model endpoint**: URL` is set (or an endpoint is found in the agent's command line
//! or `OLLAMA_HOST`), detection asks the engine itself, trying in order:
//!
//! 1. Ollama: `GET /api/ps` lists the loaded models, each with `context_length` (the `num_ctx`
//!    it was loaded with) and `size_vram` (ollama `api/types.go`, `ProcessModelResponse`); when
//!    `context_length` is missing (older servers), `POST /api/show` and its `parameters` text
//!    (`num_ctx 8192`) are read instead (ollama `docs/api.md`, "Show Model Information").
//! 2. llama.cpp's server: `GET /props` has `default_generation_settings.n_ctx` (per slot),
//!    `total_slots` and `model_path` (llama.cpp `tools/server/README.md`, "GET /props").
//! 3. vLLM: `GET /v1/models` lists `data[].max_model_len` (vLLM
//!    `entrypoints/openai/protocol.py`, `ModelCard`).
//! 4. LM Studio: `GET /api/v0/models` lists `data[]` with `state: "loaded"` and
//!    `loaded_context_length` (LM Studio docs, "REST API v0").
//!
//! Each request has a short timeout and the whole probe a bounded total, so a down or stuck
//! engine costs about a second and never blocks a run: it becomes a warning naming the URL and
//! detection falls back as before. Plain `http://` only (engines listen on loopback without
//! TLS); an `https://` endpoint is reported and not probed.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use crate::store::vram_cache::EngineReport;

/// One request's connect and read limit.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// The whole probe's limit, every engine tried.
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(3);
/// An engine's answer larger than this is not one of these endpoints.
const MAX_BODY: usize = 4 << 20;

/// [`Endpoint::from`] when only `OLLAMA_HOST` named it.
pub const FROM_OLLAMA_HOST: &str = "OLLAMA_HOST";

/// Where the endpoint came from, and the URL (`http://host:port`, no trailing slash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    pub from: String,
}

/// The endpoint to probe: config.md's `Model endpoint`, else aider's `--openai-api-base` in
/// the agent command, else `OLLAMA_HOST`. `None` when nothing names one. Pure.
pub fn find_endpoint(
    configured: Option<&str>,
    agent_command: Option<&str>,
    ollama_host: Option<&str>,
) -> Option<Endpoint> {
    if let Some(u) = configured.map(str::trim).filter(|u| !u.is_empty()) {
        return Some(Endpoint {
            url: normalize(u, None),
            from: "config.md Model endpoint".to_string(),
        });
    }
    if let Some(cmd) = agent_command {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let value = match w.strip_prefix("--openai-api-base") {
                Some("") => words.get(i + 1).copied(),
                Some(rest) => rest.strip_prefix('='),
                None => None,
            };
            if let Some(v) = value {
                let v = v.trim_matches(|c| c == '"' || c == '\'');
                let v = v.trim_end_matches('/');
                // aider is given the OpenAI-compatible base (`.../v1`); the engine's own
                // endpoints sit at the root.
                let v = v.strip_suffix("/v1").unwrap_or(v);
                return Some(Endpoint {
                    url: normalize(v, None),
                    from: "the agent command's --openai-api-base".to_string(),
                });
            }
        }
    }
    let host = ollama_host.map(str::trim).filter(|h| !h.is_empty())?;
    Some(Endpoint {
        url: normalize(host, Some(11434)),
        from: FROM_OLLAMA_HOST.to_string(),
    })
}

/// `localhost:11434`, `0.0.0.0`, `http://h:1/` -> `http://host:port`. A listen-everywhere
/// address means "this machine" to a client.
fn normalize(raw: &str, default_port: Option<u16>) -> String {
    let raw = raw.trim().trim_end_matches('/');
    let (scheme, rest) = match raw.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_string(), raw),
    };
    let rest = rest.replacen("0.0.0.0", "127.0.0.1", 1);
    let has_port = rest
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    match default_port {
        Some(port) if !has_port && !rest.contains('/') => format!("{scheme}://{rest}:{port}"),
        _ => format!("{scheme}://{rest}"),
    }
}

/// What the probe found: the engine, or why none answered (a warning naming the URL).
#[derive(Debug, Clone, PartialEq)]
pub enum Probed {
    Found(EngineReport),
    Failed(String),
}

/// Probe the engines in order at `endpoint.url`. Never fails and never takes much longer than
/// [`TOTAL_TIMEOUT`].
pub fn probe(endpoint: &Endpoint) -> Probed {
    probe_with(endpoint, REQUEST_TIMEOUT, TOTAL_TIMEOUT)
}

fn probe_with(endpoint: &Endpoint, each: Duration, total: Duration) -> Probed {
    let url = &endpoint.url;
    let fail = |why: String| {
        Probed::Failed(format!(
            "model endpoint {url} (from {}): {why}; using the model's window as before",
            endpoint.from
        ))
    };
    let Some(addr) = url.strip_prefix("http://") else {
        return fail("only plain http:// endpoints are probed (https is not supported)".into());
    };
    let (hostport, base) = match addr.split_once('/') {
        Some((h, b)) => (h.to_string(), format!("/{b}")),
        None => (addr.to_string(), String::new()),
    };
    let deadline = Instant::now() + total;
    let client = Client {
        hostport: &hostport,
        base: &base,
        each,
        deadline,
    };
    let mut tried = Vec::new();
    type Try = fn(&Client<'_>) -> Result<Option<EngineReport>, Fatal>;
    let engines: [(&str, Try); 4] = [
        ("ollama", ollama),
        ("llama.cpp", llama_cpp),
        ("vllm", vllm),
        ("lmstudio", lm_studio),
    ];
    for (name, attempt) in engines {
        match attempt(&client) {
            Ok(Some(mut found)) => {
                found.url = url.clone();
                return Probed::Found(found);
            }
            Ok(None) => tried.push(name),
            // Down or stuck: trying the next engine's path would only wait again.
            Err(Fatal(why)) => return fail(why),
        }
    }
    fail(format!(
        "no known engine answered ({} tried: {})",
        tried.len(),
        tried.join(", ")
    ))
}

/// The engine cannot be reached at all (refused, timed out): stop probing.
struct Fatal(String);

struct Client<'a> {
    hostport: &'a str,
    base: &'a str,
    each: Duration,
    deadline: Instant,
}

impl Client<'_> {
    /// `Ok(Some(json))` on a 200 with a JSON body; `Ok(None)` on another status or a body that
    /// is not JSON (the path belongs to another engine); `Err` when the server cannot be
    /// reached or does not answer in time.
    fn json(&self, method: &str, path: &str, body: Option<&str>) -> Result<Option<Value>, Fatal> {
        let (status, text) = self.request(method, path, body)?;
        if status != 200 {
            return Ok(None);
        }
        Ok(serde_json::from_slice(&text).ok())
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, Vec<u8>), Fatal> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Fatal("the probe ran out of time".into()));
        }
        let limit = self.each.min(left);
        let addr = self
            .hostport
            .to_socket_addrs()
            .map_err(|e| Fatal(format!("cannot resolve {}: {e}", self.hostport)))?
            .next()
            .ok_or_else(|| Fatal(format!("cannot resolve {}", self.hostport)))?;
        let mut s = TcpStream::connect_timeout(&addr, limit)
            .map_err(|e| Fatal(format!("cannot connect ({e})")))?;
        let started = Instant::now();
        let timeout = |e: std::io::Error| {
            Fatal(format!(
                "no answer to {method} {path} within {} ms ({e})",
                limit.as_millis()
            ))
        };
        s.set_read_timeout(Some(limit)).map_err(timeout)?;
        s.set_write_timeout(Some(limit)).map_err(timeout)?;
        let body = body.unwrap_or("");
        let head = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.base,
            self.hostport,
            body.len()
        );
        s.write_all(head.as_bytes()).map_err(timeout)?;
        s.write_all(body.as_bytes()).map_err(timeout)?;
        let mut raw = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            // A server that trickles bytes must still finish within the request's limit.
            if started.elapsed() > limit {
                return Err(Fatal(format!(
                    "no complete answer to {method} {path} within {} ms",
                    limit.as_millis()
                )));
            }
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) => return Err(timeout(e)),
            }
            if raw.len() > MAX_BODY {
                return Err(Fatal(format!(
                    "{path}: the answer is over {MAX_BODY} bytes"
                )));
            }
        }
        parse_response(&raw).ok_or_else(|| Fatal(format!("{path}: the answer is not HTTP")))
    }
}

/// Status and body of an HTTP/1.x response (Content-Length, chunked, or read to close).
fn parse_response(raw: &[u8]) -> Option<(u16, Vec<u8>)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    if !status_line.starts_with("HTTP/1.") {
        return None;
    }
    let status: u16 = status_line.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().contains("chunked")
        })
    });
    let body = &raw[end + 4..];
    if !chunked {
        return Some((status, body.to_vec()));
    }
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some((status, out));
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_u64()
}

fn str_at(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn report(name: &str, model: Option<String>, ctx: Option<u64>, raw: &Value) -> EngineReport {
    EngineReport {
        name: name.to_string(),
        url: String::new(),
        model,
        context_tokens: ctx.filter(|c| *c > 0),
        slots: None,
        vram_bytes: None,
        answer_hash: answer_hash(raw),
    }
}

/// A digest of what the engine said that bears on the budget, so a cached report is replaced
/// when the engine is restarted with another window or model.
fn answer_hash(v: &Value) -> String {
    let digest = Sha256::digest(v.to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn ollama(c: &Client<'_>) -> Result<Option<EngineReport>, Fatal> {
    let Some(ps) = c.json("GET", "/api/ps", None)? else {
        return Ok(None);
    };
    let Some(models) = ps.get("models").and_then(Value::as_array) else {
        return Ok(None);
    };
    let Some(first) = models.first() else {
        // Ollama answers but has nothing loaded: its window is only known once a model is.
        let mut r = report("ollama", None, None, &ps);
        r.slots = None;
        return Ok(Some(r));
    };
    let name = str_at(first, "model").or_else(|| str_at(first, "name"));
    let mut ctx = u64_at(first, &["context_length"]);
    if ctx.is_none()
        && let Some(n) = &name
    {
        let body = serde_json::json!({ "model": n }).to_string();
        if let Some(show) = c.json("POST", "/api/show", Some(&body))? {
            ctx = ollama_num_ctx(&show);
        }
    }
    let mut r = report("ollama", name, ctx, &ps);
    r.vram_bytes = u64_at(first, &["size_vram"]);
    Ok(Some(r))
}

/// `/api/show`'s `parameters` text holds one `name value` a line; `num_ctx` is the window the
/// model is loaded with when the Modelfile sets one.
pub fn ollama_num_ctx(show: &Value) -> Option<u64> {
    show.get("parameters")?.as_str()?.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next()? == "num_ctx").then(|| w.next()?.parse().ok())?
    })
}

fn llama_cpp(c: &Client<'_>) -> Result<Option<EngineReport>, Fatal> {
    let Some(props) = c.json("GET", "/props", None)? else {
        return Ok(None);
    };
    let Some(ctx) = u64_at(&props, &["default_generation_settings", "n_ctx"]) else {
        return Ok(None);
    };
    let model = str_at(&props, "model_path").map(|p| {
        std::path::Path::new(&p)
            .file_name()
            .map_or(p.clone(), |f| f.to_string_lossy().into_owned())
    });
    let mut r = report("llama.cpp", model, Some(ctx), &props);
    r.slots = u64_at(&props, &["total_slots"]);
    Ok(Some(r))
}

fn vllm(c: &Client<'_>) -> Result<Option<EngineReport>, Fatal> {
    let Some(list) = c.json("GET", "/v1/models", None)? else {
        return Ok(None);
    };
    let Some(first) = list
        .get("data")
        .and_then(Value::as_array)
        .and_then(|d| d.iter().find(|m| m.get("max_model_len").is_some()))
    else {
        return Ok(None);
    };
    let ctx = u64_at(first, &["max_model_len"]);
    Ok(Some(report("vllm", str_at(first, "id"), ctx, &list)))
}

fn lm_studio(c: &Client<'_>) -> Result<Option<EngineReport>, Fatal> {
    let Some(list) = c.json("GET", "/api/v0/models", None)? else {
        return Ok(None);
    };
    let Some(data) = list.get("data").and_then(Value::as_array) else {
        return Ok(None);
    };
    let loaded = data
        .iter()
        .find(|m| m.get("state").and_then(Value::as_str) == Some("loaded"));
    let (model, ctx) = match loaded {
        Some(m) => (str_at(m, "id"), u64_at(m, &["loaded_context_length"])),
        None => (None, None),
    };
    Ok(Some(report("lmstudio", model, ctx, &list)))
}

pub use crate::plan::fit::how_to_raise;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_order_and_forms() {
        let e = find_endpoint(Some("http://localhost:8080/"), Some("aider"), Some("x")).unwrap();
        assert_eq!(e.url, "http://localhost:8080");
        let e = find_endpoint(
            None,
            Some("aider --openai-api-base http://127.0.0.1:9000/v1 --yes"),
            Some("0.0.0.0"),
        )
        .unwrap();
        assert_eq!(e.url, "http://127.0.0.1:9000");
        let e = find_endpoint(None, Some("aider --openai-api-base=http://h:1/v1"), None).unwrap();
        assert_eq!(e.url, "http://h:1");
        let e = find_endpoint(None, Some("claude -p"), Some("0.0.0.0")).unwrap();
        assert_eq!(e.url, "http://127.0.0.1:11434");
        assert_eq!(e.from, "OLLAMA_HOST");
        let e = find_endpoint(None, None, Some("localhost:5000")).unwrap();
        assert_eq!(e.url, "http://localhost:5000");
        assert_eq!(find_endpoint(Some(" "), None, None), None);
    }

    #[test]
    fn chunked_and_plain_bodies() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(parse_response(raw), Some((200, b"{\"a\":1}".to_vec())));
        let raw = b"HTTP/1.0 404 Not Found\r\nContent-Length: 2\r\n\r\nno";
        assert_eq!(parse_response(raw), Some((404, b"no".to_vec())));
        assert_eq!(parse_response(b"garbage"), None);
    }

    #[test]
    fn num_ctx_from_show_parameters() {
        let show = serde_json::json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 8192\n"});
        assert_eq!(ollama_num_ctx(&show), Some(8192));
        assert_eq!(ollama_num_ctx(&serde_json::json!({"parameters": ""})), None);
    }

    #[test]
    fn https_is_refused_with_the_url() {
        let e = Endpoint {
            url: "https://example.invalid".into(),
            from: "test".into(),
        };
        match probe(&e) {
            Probed::Failed(w) => {
                assert!(w.contains("https://example.invalid"), "{w}");
                assert!(w.contains("https is not supported"), "{w}");
            }
            other => panic!("{other:?}"),
        }
    }
}
