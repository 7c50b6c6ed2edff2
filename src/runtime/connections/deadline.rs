//! One connection's phases and its write deadline: the request body tells its slot when it has
//! arrived in full, the answer when it has been handed over, and every write of the answer fails once
//! the answer has taken longer than the write deadline, which ends the connection and frees what the
//! answer held (a client that never reads would otherwise pin it until it closes).

use std::{
    io,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll, ready},
    time::Duration,
};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    time::{Instant, Sleep},
};

use super::slots::{Phase, Slot};

/// What the parts of one connection share.
pub(super) struct Connection {
    pub(super) slot: Slot,
    answer: Mutex<AnswerClock>,
}

#[derive(Default)]
struct AnswerClock {
    /// When the answer being written must be out; `None` between answers.
    deadline: Option<Instant>,
    /// The answer's body has been handed over in full: the next completed flush ends it.
    handed_over: bool,
}

impl Connection {
    pub(super) fn new(slot: Slot) -> Connection {
        Connection {
            slot,
            answer: Mutex::new(AnswerClock::default()),
        }
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, AnswerClock> {
        self.answer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An answer is about to be written: it has `within` to get out.
    pub(super) fn answering(&self, within: Duration) {
        self.slot.enter(Phase::Busy);
        *self.clock() = AnswerClock {
            deadline: Some(Instant::now() + within),
            handed_over: false,
        };
    }

    /// The answer's body has been handed over (or dropped with the connection).
    fn handed_over(&self) {
        self.clock().handed_over = true;
        self.slot.enter(Phase::Waiting);
    }

    fn deadline(&self) -> Option<Instant> {
        self.clock().deadline
    }

    /// Everything written so far has left the process.
    fn flushed(&self) {
        let mut clock = self.clock();
        if clock.handed_over {
            clock.deadline = None;
        }
    }

    /// Closing the connection (a TLS close_notify to write) gets a deadline too.
    fn closing(&self, within: Duration) {
        self.clock()
            .deadline
            .get_or_insert_with(|| Instant::now() + within);
    }
}

/// The connection's I/O: writes fail with `TimedOut` once the answer's deadline has passed, and a
/// write that cannot proceed wakes the connection at the deadline, so that a client that stops
/// reading is dropped then rather than never.
pub(super) struct WriteDeadline<IO> {
    io: IO,
    connection: Arc<Connection>,
    write_timeout: Duration,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<IO> WriteDeadline<IO> {
    pub(super) fn new(io: IO, connection: Arc<Connection>, write_timeout: Duration) -> Self {
        WriteDeadline {
            io,
            connection,
            write_timeout,
            timer: None,
        }
    }

    /// Runs `write` unless the deadline has passed; when it cannot proceed, arms the timer.
    fn guarded<T>(
        &mut self,
        cx: &mut Context<'_>,
        write: impl FnOnce(Pin<&mut IO>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>>
    where
        IO: Unpin,
    {
        let deadline = self.connection.deadline();
        if deadline.is_some_and(|at| Instant::now() >= at) {
            return Poll::Ready(Err(timed_out()));
        }
        let result = write(Pin::new(&mut self.io), cx);
        if result.is_pending()
            && let Some(at) = deadline
        {
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.deadline() != at {
                timer.as_mut().reset(at);
            }
            if timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(timed_out()));
            }
        }
        result
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "answer not written in time")
}

impl<IO: AsyncRead + Unpin> AsyncRead for WriteDeadline<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().guarded(cx, |io, cx| io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .guarded(cx, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.guarded(cx, |io, cx| io.poll_flush(cx)))?;
        this.connection.flushed();
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.connection.closing(this.write_timeout);
        this.guarded(cx, |io, cx| io.poll_shutdown(cx))
    }
}

/// A request's body: tells the slot when it has arrived in full (the request is no longer
/// unfinished, and its connection is not given to another client from then on).
pub(super) struct RequestBody {
    inner: Incoming,
    connection: Arc<Connection>,
}

impl RequestBody {
    pub(super) fn new(inner: Incoming, connection: Arc<Connection>) -> RequestBody {
        RequestBody { inner, connection }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        if frame.is_none() || self.inner.is_end_stream() {
            self.connection.slot.enter(Phase::Busy);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An answer's body: tells the connection when it has been handed over in full (or dropped with the
/// connection).
pub(super) struct AnswerBody<B> {
    inner: B,
    connection: Arc<Connection>,
    handed_over: bool,
}

impl<B> AnswerBody<B> {
    pub(super) fn new(inner: B, connection: Arc<Connection>) -> AnswerBody<B> {
        AnswerBody {
            inner,
            connection,
            handed_over: false,
        }
    }

    fn hand_over(&mut self) {
        if !self.handed_over {
            self.handed_over = true;
            self.connection.handed_over();
        }
    }
}

impl<B: Body + Unpin> Body for AnswerBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        if frame.is_none() {
            self.hand_over();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for AnswerBody<B> {
    fn drop(&mut self) {
        self.hand_over();
    }
}
