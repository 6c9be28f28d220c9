//! `detect-vram` and `orchestrate` asking a local engine for its window, against small stub
//! servers (a TcpListener thread each) that answer with the engines' real response shapes:
//! - Ollama `GET /api/ps` (`models[].context_length`, `size_vram`: ollama `api/types.go`,
//!   `ProcessModelResponse`; `docs/api.md` "List Running Models");
//! - llama.cpp `GET /props` (`default_generation_settings.n_ctx`, `total_slots`, `model_path`:
//!   llama.cpp `tools/server/README.md`, "GET /props");
//! - vLLM `GET /v1/models` (`data[].max_model_len`: vLLM `entrypoints/openai/protocol.py`,
//!   `ModelCard`);
//! - LM Studio `GET /api/v0/models` (`data[].state`, `loaded_context_length`: LM Studio docs,
//!   "REST API v0").
//!
//! Paths a stub does not serve answer 404, as the real servers do.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::harness::Project;

/// The documented exit code of a phase that would not fit the engine's window.
const CONTEXT_TOO_SMALL: i32 = 31;

/// A stub engine: `routes` maps `METHOD /path` to a JSON body (changeable while it runs).
struct Stub {
    url: String,
    routes: Arc<Mutex<Vec<(String, String)>>>,
}

impl Stub {
    fn start(routes: &[(&str, &str)], delay: Duration) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let routes = Arc::new(Mutex::new(
            routes
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect::<Vec<_>>(),
        ));
        let shared = Arc::clone(&routes);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let routes = Arc::clone(&shared);
                std::thread::spawn(move || serve(conn, &routes, delay));
            }
        });
        Stub { url, routes }
    }

    fn set(&self, route: &str, body: &str) {
        let mut r = self.routes.lock().unwrap();
        r.retain(|(k, _)| k != route);
        r.push((route.to_string(), body.to_string()));
    }
}

fn serve(mut conn: TcpStream, routes: &Mutex<Vec<(String, String)>>, delay: Duration) {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&raw).to_string();
    let mut words = head.split_whitespace();
    let key = format!(
        "{} {}",
        words.next().unwrap_or(""),
        words.next().unwrap_or("")
    );
    std::thread::sleep(delay);
    let body = routes
        .lock()
        .unwrap()
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.clone());
    let (status, body) = match body {
        Some(b) => ("200 OK", b),
        None => ("404 Not Found", "404 page not found".to_string()),
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
}

fn ollama_ps(ctx: u64) -> String {
    format!(
        r#"{{"models":[{{"name":"qwen2.5-coder:7b","model":"qwen2.5-coder:7b","size":6654289920,
        "digest":"2b0496514337","details":{{"parent_model":"","format":"gguf","family":"qwen2",
        "families":["qwen2"],"parameter_size":"7.6B","quantization_level":"Q4_K_M"}},
        "expires_at":"2026-12-03T17:20:02.1Z","size_vram":5368709120,"context_length":{ctx}}}]}}"#
    )
}

/// A project whose config.md names a model the table knows (qwen2.5: 32,768 tokens) and
/// the endpoint.
fn project(endpoint: &str) -> Project {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        format!(
            "# Config\n\n## Model Configuration\n- **Model**: qwen2.5-coder:7b\n\
             - **Model endpoint**: {endpoint}\n"
        ),
    );
    p
}

struct Out {
    code: i32,
    json: Value,
    stdout: String,
    stderr: String,
}

fn detect(p: &Project, args: &[&str]) -> Out {
    let ran = p
        .test()
        .arg("detect-vram")
        .args(args)
        .status_any()
        .stdout_any()
        .stderr_any()
        .run();
    Out {
        code: ran.code.unwrap_or(-1),
        json: serde_json::from_str(&ran.raw_stdout).unwrap_or(Value::Null),
        stdout: ran.stdout.clone(),
        stderr: ran.stderr.clone(),
    }
}

#[test]
fn the_table_window_is_used_without_an_endpoint() {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Model Configuration\n- **Model**: qwen2.5-coder:7b\n",
    );
    let out = detect(&p, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json["model_context_kb"], 32_768, "{}", out.json);
    assert!(out.json["engine"].is_null(), "{}", out.json);
}

#[test]
fn ollamas_configured_window_wins_over_the_model_table() {
    let stub = Stub::start(&[("GET /api/ps", &ollama_ps(4096))], Duration::ZERO);
    let p = project(&stub.url);
    let out = detect(&p, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = &out.json;
    assert_eq!(v["model_context_kb"], 4096, "{v}");
    assert_eq!(v["engine"]["name"], "ollama", "{v}");
    assert_eq!(v["engine"]["url"], stub.url.as_str(), "{v}");
    assert_eq!(v["engine"]["model"], "qwen2.5-coder:7b", "{v}");
    assert_eq!(v["engine"]["context_tokens"], 4096, "{v}");
    assert_eq!(v["engine"]["vram_bytes"], 5_368_709_120u64, "{v}");
    assert_eq!(
        v["model_context_source"],
        format!("engine (ollama at {})", stub.url),
        "{v}"
    );
    // 4096 tokens less the framework overhead is below the minimum: the warning says how to
    // raise this engine's window.
    assert!(
        out.stderr.contains("OLLAMA_CONTEXT_LENGTH"),
        "{}",
        out.stderr
    );

    let human = detect(&p, &["--human"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(
        human.stdout.contains(&format!(
            "- Engine: ollama at {}, model qwen2.5-coder:7b, 4096 tokens configured, 5.0GB in VRAM\n",
            stub.url
        )),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains(&format!("window from engine (ollama at {})", stub.url)),
        "{}",
        human.stdout
    );
}

#[test]
fn llama_cpp_props_give_the_window_and_the_slots() {
    let props = r#"{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":8192,
        "speculative":false,"is_processing":false,"params":{"n_predict":-1,"seed":4294967295}},
        "total_slots":4,"model_path":"/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf",
        "chat_template":"{{ x }}","build_info":"b5400-abc"}"#;
    let stub = Stub::start(&[("GET /props", props)], Duration::ZERO);
    let p = project(&stub.url);
    let out = detect(&p, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = &out.json;
    assert_eq!(v["engine"]["name"], "llama.cpp", "{v}");
    assert_eq!(v["engine"]["slots"], 4, "{v}");
    assert_eq!(
        v["engine"]["model"], "qwen2.5-coder-7b-instruct-q4_k_m.gguf",
        "{v}"
    );
    assert_eq!(v["model_context_kb"], 8192, "{v}");
}

#[test]
fn vllm_max_model_len_is_the_window() {
    let models = r#"{"object":"list","data":[{"id":"Qwen/Qwen2.5-Coder-7B-Instruct",
        "object":"model","created":1733245200,"owned_by":"vllm",
        "root":"Qwen/Qwen2.5-Coder-7B-Instruct","parent":null,"max_model_len":16384,
        "permission":[]}]}"#;
    let stub = Stub::start(&[("GET /v1/models", models)], Duration::ZERO);
    let p = project(&stub.url);
    let out = detect(&p, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json["engine"]["name"], "vllm", "{}", out.json);
    assert_eq!(out.json["model_context_kb"], 16_384, "{}", out.json);
}

#[test]
fn lm_studio_loaded_context_length_is_the_window() {
    let models = r#"{"object":"list","data":[
        {"id":"text-embedding-nomic-embed-text-v1.5","object":"model","type":"embeddings",
         "publisher":"nomic-ai","arch":"nomic-bert","compatibility_type":"gguf",
         "quantization":"Q4_0","state":"not-loaded","max_context_length":2048},
        {"id":"qwen2.5-coder-7b-instruct","object":"model","type":"llm","publisher":"lmstudio-community",
         "arch":"qwen2","compatibility_type":"gguf","quantization":"Q4_K_M","state":"loaded",
         "max_context_length":32768,"loaded_context_length":12000}]}"#;
    let stub = Stub::start(&[("GET /api/v0/models", models)], Duration::ZERO);
    let p = project(&stub.url);
    let out = detect(&p, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json["engine"]["name"], "lmstudio", "{}", out.json);
    assert_eq!(
        out.json["engine"]["model"], "qwen2.5-coder-7b-instruct",
        "{}",
        out.json
    );
    assert_eq!(out.json["model_context_kb"], 12_000, "{}", out.json);
}

/// The engine did not help: the table's window, no `engine`, a warning naming the URL.
fn assert_fell_back(out: &Out, url: &str, why: &str) {
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json["model_context_kb"], 32_768, "{}", out.json);
    assert!(out.json["engine"].is_null(), "{}", out.json);
    assert!(
        out.stderr.contains(&format!("model endpoint {url}")) && out.stderr.contains(why),
        "no warning naming {url} ({why}):\n{}",
        out.stderr
    );
}

#[test]
fn an_engine_that_is_down_falls_back_with_a_warning() {
    // A port that was just free: nothing listens there.
    let url = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let p = project(&url);
    assert_fell_back(&detect(&p, &[]), &url, "cannot connect");
}

#[test]
fn a_slow_engine_falls_back_with_a_warning() {
    // Answers after 3 s, past the 1 s a request is given.
    let stub = Stub::start(&[("GET /api/ps", &ollama_ps(4096))], Duration::from_secs(3));
    let p = project(&stub.url);
    assert_fell_back(&detect(&p, &[]), &stub.url, "no answer");
}

#[test]
fn an_engine_answering_garbage_falls_back_with_a_warning() {
    let stub = Stub::start(
        &[
            ("GET /api/ps", "<html>hello</html>"),
            ("GET /props", "{\"n_ctx\": \"lots\"}"),
            ("GET /v1/models", "[1, 2"),
            ("GET /api/v0/models", "{}"),
        ],
        Duration::ZERO,
    );
    let p = project(&stub.url);
    assert_fell_back(&detect(&p, &[]), &stub.url, "no known engine answered");
}

#[test]
fn https_endpoints_are_not_probed_and_say_so() {
    let p = project("https://127.0.0.1:1");
    assert_fell_back(
        &detect(&p, &[]),
        "https://127.0.0.1:1",
        "https is not supported",
    );
}

#[test]
fn the_cache_is_replaced_when_the_engine_answers_differently() {
    let stub = Stub::start(&[("GET /api/ps", &ollama_ps(4096))], Duration::ZERO);
    let p = project(&stub.url);
    let first = detect(&p, &[]);
    assert_eq!(first.json["model_context_kb"], 4096, "{}", first.json);
    let again = detect(&p, &[]);
    assert_eq!(again.json["cached"], true, "{}", again.json);
    // The engine restarted with OLLAMA_CONTEXT_LENGTH=16384: the cache must not hide it.
    stub.set("GET /api/ps", &ollama_ps(16_384));
    let changed = detect(&p, &[]);
    assert_eq!(changed.json["cached"], false, "{}", changed.json);
    assert_eq!(changed.json["model_context_kb"], 16_384, "{}", changed.json);
}

#[test]
fn ollama_host_is_an_endpoint_when_config_names_none() {
    let stub = Stub::start(&[("GET /api/ps", &ollama_ps(6144))], Duration::ZERO);
    let p = Project::new();
    let ran = p
        .test()
        .env("OLLAMA_HOST", stub.url.trim_start_matches("http://"))
        .args(["detect-vram"])
        .stdout_any()
        .stderr_any()
        .run();
    let v: Value = serde_json::from_str(&ran.raw_stdout).expect("json");
    assert_eq!(v["model_context_kb"], 6144, "{v}");
    assert_eq!(v["engine"]["name"], "ollama", "{v}");
}

#[test]
fn a_phase_over_ollamas_window_stops_before_the_agent_starts() {
    let stub = Stub::start(&[("GET /api/ps", &ollama_ps(4096))], Duration::ZERO);
    let p = project(&stub.url);
    // About 10,000 tokens of spec for the first phase to read: over a 4096-token window.
    p.write(
        "tasks/big/SPEC.md",
        "Build the thing described here in detail.\n".repeat(1000),
    );
    let ran = p
        .orchestrate()
        .agent_log()
        .args(["--task", "tasks/big"])
        .status(CONTEXT_TOO_SMALL)
        .stdout_any()
        .stderr_any()
        .run();
    for part in [
        "4096-token window",
        "OLLAMA_CONTEXT_LENGTH",
        stub.url.as_str(),
        "nothing ran",
    ] {
        assert!(
            ran.stderr.contains(part) || ran.stdout.contains(part),
            "{part} missing:\n{}\n{}",
            ran.stdout,
            ran.stderr
        );
    }
    // The scripted agent writes agent.log on every run: it never started.
    assert!(!p.join("agent.log").exists(), "the agent ran");
    // Raised to 64k, the same task runs.
    stub.set("GET /api/ps", &ollama_ps(65_536));
    p.orchestrate()
        .agent_log()
        .args(["--task", "tasks/big"])
        .stdout_any()
        .stderr_any()
        .run();
    assert!(p.join("agent.log").exists(), "the agent never ran");
}

#[test]
fn jobs_auto_uses_the_engines_slots() {
    let props = r#"{"default_generation_settings":{"n_ctx":65536},"total_slots":3,
        "model_path":"/models/m.gguf"}"#;
    let stub = Stub::start(&[("GET /props", props)], Duration::ZERO);
    let p = project(&stub.url);
    p.write("tasks/small/SPEC.md", "x");
    let ran = p
        .orchestrate()
        .args(["--jobs", "auto", "--task", "tasks/small"])
        .stdout_any()
        .stderr_any()
        .run();
    assert!(
        ran.stderr.contains(&format!(
            "--jobs auto: 3 at once (llama.cpp at {} serves 3 parallel slots)",
            stub.url
        )),
        "{}",
        ran.stderr
    );
}

#[test]
fn ollama_host_never_overrides_a_hosted_models_window() {
    // OLLAMA_HOST only says where Ollama would be; a Claude run does not use it.
    let stub = Stub::start(&[("GET /api/ps", &ollama_ps(4096))], Duration::ZERO);
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Model Configuration\n- **Model**: claude-opus-4-7\n",
    );
    let ran = p
        .test()
        .env("OLLAMA_HOST", stub.url.as_str())
        .args(["detect-vram"])
        .stdout_any()
        .stderr_any()
        .run();
    let v: Value = serde_json::from_str(&ran.raw_stdout).expect("json");
    assert_eq!(v["model_context_kb"], 1_000_000, "{v}");
    assert!(v["engine"].is_null(), "{v}");
}
