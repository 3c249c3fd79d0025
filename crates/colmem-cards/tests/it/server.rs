//! A scripted OpenAI-compatible loopback server on 127.0.0.1 for recording cassettes:
//! each connection gets the next scripted completion, then is closed.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::json;

/// The running server; dropping it stops it.
pub struct Server {
    base_url: String,
    thread: Option<JoinHandle<()>>,
    stop: Arc<Mutex<bool>>,
    addr: std::net::SocketAddr,
}

impl Server {
    /// Serves `answers` (assistant message texts) in order.
    pub fn start(answers: Vec<String>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let script = Arc::new(Mutex::new(VecDeque::from(answers)));
        let stop = Arc::new(Mutex::new(false));
        let stop_in = stop.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if *stop_in.lock().unwrap() {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let answer = script.lock().unwrap().pop_front();
                serve(stream, answer);
            }
        });
        Server {
            base_url: format!("http://{addr}/v1"),
            thread: Some(thread),
            stop,
            addr,
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        *self.stop.lock().unwrap() = true;
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, answer: Option<String>) {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.trim().eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (status, text) = match answer {
        Some(answer) => (
            200,
            json!({
                "id": "chatcmpl-cards",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140},
            })
            .to_string(),
        ),
        None => (500, r#"{"error": {"message": "the script ran out"}}"#.to_owned()),
    };
    let mut stream = reader.into_inner();
    let head = format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        text.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(text.as_bytes());
    let _ = stream.flush();
}
