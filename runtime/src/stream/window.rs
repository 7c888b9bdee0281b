//! The receiver's side of a stream's credit: how many items the sender may still send, and
//! when to grant it more. The client keeps one per server stream, the server one per upload.

/// The credit a receiver has granted: an item the sender had no credit for is a protocol
/// violation, and credit is granted back half a window at a time as the consumer takes
/// items, so a steady consumer tops the sender up before it runs out with one `Credit` frame
/// per half window.
#[derive(Debug)]
pub(crate) struct ReceiveWindow {
    /// Granted and not yet used by an item.
    outstanding: u32,
    /// Items taken since credit was last granted.
    taken: u32,
    window: u32,
}

impl ReceiveWindow {
    /// A window of `window` items, all granted at once (the first `Credit` frame).
    pub(crate) fn granted(window: u32) -> Self {
        Self {
            outstanding: window,
            taken: 0,
            window,
        }
    }

    /// Counts an item that arrived; false when the sender had no credit for it.
    pub(crate) fn receive(&mut self) -> bool {
        match self.outstanding.checked_sub(1) {
            Some(left) => {
                self.outstanding = left;
                true
            }
            None => false,
        }
    }

    /// Counts an item the consumer took; the credit to grant now, if any.
    pub(crate) fn take(&mut self) -> Option<u32> {
        self.taken += 1;
        if self.taken < (self.window / 2).max(1) {
            return None;
        }
        let grant = std::mem::take(&mut self.taken);
        self.outstanding += grant;
        Some(grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credit_is_granted_back_half_a_window_at_a_time() {
        let mut window = ReceiveWindow::granted(4);
        assert!((0..4).all(|_| window.receive()));
        assert!(!window.receive(), "a fifth item had no credit");
        assert_eq!(window.take(), None);
        assert_eq!(window.take(), Some(2));
        assert!(window.receive() && window.receive());
        assert!(!window.receive());
    }

    #[test]
    fn a_window_of_one_grants_each_item_back() {
        let mut window = ReceiveWindow::granted(1);
        assert!(window.receive());
        assert!(!window.receive());
        assert_eq!(window.take(), Some(1));
        assert!(window.receive());
    }
}
