//! The sender's side of a stream's credit: how many more items the receiver allows.
//!
//! A tokio [`Semaphore`] holds the credit: the sender takes one permit per item (waiting
//! while there is none) and a `Credit` frame adds permits. The outstanding count is checked
//! on the sender's side: it can only be lower than the receiver's (items in flight are spent
//! here and not yet received there), so an honest receiver is never refused.

use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use tokio::sync::Semaphore;

use crate::transport::frame::{Frame, FrameKind};
use crate::wire::MAX_STREAM_CREDIT;

/// A `Credit` frame granting `granted` more items on stream `request_id`.
pub(crate) fn credit_frame(request_id: u64, granted: u32) -> Bytes {
    Frame {
        payload: Bytes::copy_from_slice(&granted.to_be_bytes()),
        ..Frame::control(FrameKind::Credit, request_id)
    }
    .to_bytes()
}

/// The credit a stream's receiver has granted its sender.
#[derive(Debug)]
pub(crate) struct SendCredit {
    permits: Semaphore,
    /// Granted and not yet spent: at most [`MAX_STREAM_CREDIT`].
    outstanding: AtomicU32,
}

/// Why a `Credit` frame is a protocol violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CreditError {
    /// A grant of zero items.
    #[error("a Credit frame granted 0 items")]
    Zero,
    /// The grant took the outstanding credit past the limit.
    #[error("a Credit frame took the stream's outstanding credit to {total}, over the limit of {MAX_STREAM_CREDIT}")]
    Overflow {
        /// What the outstanding credit would have been.
        total: u64,
    },
    /// The payload is not a `u32`.
    #[error("a Credit frame's payload must be 4 bytes, not {0}")]
    BadLength(usize),
}

impl Default for SendCredit {
    fn default() -> Self {
        Self {
            permits: Semaphore::new(0),
            outstanding: AtomicU32::new(0),
        }
    }
}

impl SendCredit {
    /// Reads a `Credit` frame's payload: the number of items it grants.
    pub(crate) fn parse(payload: &[u8]) -> Result<u32, CreditError> {
        let bytes: [u8; 4] = payload
            .try_into()
            .map_err(|_| CreditError::BadLength(payload.len()))?;
        match u32::from_be_bytes(bytes) {
            0 => Err(CreditError::Zero),
            granted => Ok(granted),
        }
    }

    /// Adds `granted` items to the credit.
    pub(crate) fn grant(&self, granted: u32) -> Result<(), CreditError> {
        if granted == 0 {
            return Err(CreditError::Zero);
        }
        let mut current = self.outstanding.load(Ordering::Relaxed);
        loop {
            let total = u64::from(current) + u64::from(granted);
            if total > u64::from(MAX_STREAM_CREDIT) {
                return Err(CreditError::Overflow { total });
            }
            match self.outstanding.compare_exchange_weak(
                current,
                total as u32,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => current = now,
            }
        }
        self.permits.add_permits(granted as usize);
        Ok(())
    }

    /// Spends one item of credit if there is some, without waiting; whether it did.
    pub(crate) fn try_spend(&self) -> bool {
        match self.permits.try_acquire() {
            Ok(permit) => {
                permit.forget();
                self.outstanding.fetch_sub(1, Ordering::AcqRel);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether there is credit for an item now. Only the stream's sender spends credit, so
    /// for it, credit seen here is still there when it spends it.
    pub(crate) fn is_available(&self) -> bool {
        self.permits.available_permits() > 0
    }

    /// Spends one item of credit, waiting until there is some.
    pub(crate) async fn spend(&self) {
        // The semaphore is never closed: acquiring only waits.
        if let Ok(permit) = self.permits.acquire().await {
            permit.forget();
            self.outstanding.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_a_u32_of_at_least_one() {
        assert_eq!(SendCredit::parse(&[0, 0, 0, 5]), Ok(5));
        assert_eq!(SendCredit::parse(&[0, 0, 0, 0]), Err(CreditError::Zero));
        assert_eq!(SendCredit::parse(&[0, 5]), Err(CreditError::BadLength(2)));
    }

    #[tokio::test]
    async fn the_sender_waits_for_credit_and_spends_it() {
        let credit = SendCredit::default();
        assert!(futures::poll!(std::pin::pin!(credit.spend())).is_pending());
        credit.grant(2).unwrap();
        credit.spend().await;
        credit.spend().await;
        assert!(futures::poll!(std::pin::pin!(credit.spend())).is_pending());
    }

    #[test]
    fn outstanding_credit_over_the_limit_is_refused() {
        let credit = SendCredit::default();
        credit.grant(MAX_STREAM_CREDIT).unwrap();
        assert_eq!(
            credit.grant(1),
            Err(CreditError::Overflow {
                total: u64::from(MAX_STREAM_CREDIT) + 1
            })
        );
        assert_eq!(
            credit.grant(u32::MAX),
            Err(CreditError::Overflow {
                total: u64::from(MAX_STREAM_CREDIT) + u64::from(u32::MAX)
            })
        );
    }
}
