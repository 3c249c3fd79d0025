//! A scripted loopback HTTP/1.1 server: each connection gets the next scripted reply, then is closed.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use colmem_llm::{Embedder, OfflineConfig, OfflineEmbedder};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// What the server answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A status and a body.
    Status(u16, String),
    /// A status, extra headers and a body.
    WithHeaders(u16, Vec<(&'static str, String)>, String),
    /// Waits this long, then answers 200 with the body.
    Slow(Duration, String),
    /// Declares the whole body's length, sends half of it and closes the connection.
    Truncated(String),
    /// Answers an embeddings request with the offline embedder's vectors (dimension 16).
    EmbedEcho,
}

/// One request the server saw.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

/// The running server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(script: Vec<Reply>) -> Server {
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let seen_in = seen.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                tokio::spawn(async move {
                    while let Ok((stream, _)) = listener.accept().await {
                        tokio::spawn(serve(stream, script.clone(), seen_in.clone()));
                    }
                });
                // Runs until the test drops the server; dropping the runtime then ends every task.
                let _ = stopped.await;
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        Server {
            addr,
            seen,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    mut stream: TcpStream,
    script: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
) {
    let Some((path, authorization, body)) = read_request(&mut stream).await else {
        return;
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().push(Seen {
        path,
        authorization,
        body: body.clone(),
    });
    let reply = script.lock().unwrap().pop_front().unwrap_or_else(|| {
        Reply::Status(
            500,
            r#"{"error": {"message": "the script ran out"}}"#.into(),
        )
    });
    let (status, headers, text, cut) = match reply {
        Reply::Status(status, text) => (status, vec![], text, false),
        Reply::WithHeaders(status, headers, text) => (status, headers, text, false),
        Reply::Slow(wait, text) => {
            tokio::time::sleep(wait).await;
            (200, vec![], text, false)
        }
        Reply::Truncated(text) => (200, vec![], text, true),
        Reply::EmbedEcho => (200, vec![], echo_embeddings(&body), false),
    };
    let mut head = format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        text.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let bytes = if cut {
        &text.as_bytes()[..text.len() / 2]
    } else {
        text.as_bytes()
    };
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(bytes).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

/// Reads one request: the path, the authorization header and the body.
async fn read_request(stream: &mut TcpStream) -> Option<(String, Option<String>, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let path = head.split_whitespace().nth(1)?.to_owned();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    Some((
        path,
        header("authorization"),
        buffer[head_end..head_end + length].to_vec(),
    ))
}

/// The dimension of [`Reply::EmbedEcho`]'s vectors.
pub const ECHO_DIM: usize = 16;

fn echo_embeddings(request: &Value) -> String {
    let embedder = OfflineEmbedder::new(OfflineConfig {
        dim: ECHO_DIM,
        ..OfflineConfig::default()
    })
    .unwrap();
    let texts: Vec<&str> = request["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let vectors = embedder.embed(&texts).unwrap();
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    json!({"object": "list", "data": data, "model": request["model"]}).to_string()
}

/// A chat completion body with this answer and usage.
pub fn completion(text: &str, prompt_tokens: u64, completion_tokens: u64) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
    })
    .to_string()
}
