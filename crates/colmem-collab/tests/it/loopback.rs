//! A scripted OpenAI-compatible chat server on 127.0.0.1: each request gets the next
//! scripted answer as a chat completion, then the connection is closed.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::json;

/// The running server; dropping it stops it.
pub struct Loopback {
    addr: SocketAddr,
    served: Arc<Mutex<usize>>,
    thread: Option<JoinHandle<()>>,
}

impl Loopback {
    /// Serves `answers` in order, one per request, as the assistant's message.
    pub fn start(answers: Vec<String>) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let count = answers.len();
        let script = Arc::new(Mutex::new(VecDeque::from(answers)));
        let served = Arc::new(Mutex::new(0));
        let served_in = served.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming().take(count + 1) {
                let Ok(mut stream) = stream else { continue };
                let Some(answer) = script.lock().unwrap().pop_front() else {
                    return;
                };
                if serve(&mut stream, &answer).is_some() {
                    *served_in.lock().unwrap() += 1;
                }
            }
        });
        Loopback {
            addr,
            served,
            thread: Some(thread),
        }
    }

    /// The base URL to configure a client with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// How many requests were answered.
    pub fn served(&self) -> usize {
        *self.served.lock().unwrap()
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        // Wakes the accept loop if it still waits, so the thread ends.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: &mut TcpStream, answer: &str) -> Option<()> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = json!({
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 60, "completion_tokens": 8, "total_tokens": 68},
    })
    .to_string();
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).ok()?;
    stream.flush().ok()
}
