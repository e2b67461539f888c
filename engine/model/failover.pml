/*
 * Model of Rolis replication with epoch failover (docs/replication.md).
 *
 * NR acceptors, NS streams of NK slots each. Epoch 1 starts open with the
 * decided record (1, {}). Failover drivers for epochs 2..MAXE run concurrently
 * with each other and with every earlier leader, which keep sending accepts
 * and acknowledging until they are fenced. Messages are delivered in any
 * order, late or never (a leader's pending accept is deliverable at any time;
 * repeating one is harmless).
 *
 * Checked:
 *   - no acknowledged transaction is lost: when a leader opens, every entry
 *     acknowledged so far is valid under its decided record and in its state;
 *     an acknowledgement made after a newer leader opened must be in that
 *     leader's state too;
 *   - states never shrink: a newly opened leader's state contains the state
 *     of the leader that opened before it.
 *
 * Values: kind (TXN, NOOP, BARRIER), epoch of the leader that created it, and
 * ts. ts comes from one global counter, so a transaction is named by its ts.
 * Keys are (epoch, ts), ordered epoch first: KEY(e, ts) = e * 32 + ts.
 */

#define NR 3
#define NS 2
#define NK 5
#define MAXE 4
#define MAXTS 14
#define MAJ 2

#define K_EMPTY 0
#define K_TXN   1
#define K_NOOP  2
#define K_BAR   3

#define KEY(e, t) ((e) * 32 + (t))
#define SLOT(s, k) ((s) * NK + (k))
#define ASLOT(r, s, k) ((r) * NS * NK + (s) * NK + (k))
#define LSLOT(e, s, k) ((e) * NS * NK + (s) * NK + (k))
#define NBITS(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))

/* Acceptors. */
byte prom[NR];
byte a_bal[NR * NS * NK];
byte a_kind[NR * NS * NK];
byte a_ep[NR * NS * NK];
byte a_ts[NR * NS * NK];

/* Leaders (index = epoch): what each proposed per slot and who accepted it. */
byte p_kind[(MAXE + 1) * NS * NK];
byte p_ep[(MAXE + 1) * NS * NK];
byte p_ts[(MAXE + 1) * NS * NK];
byte p_mask[(MAXE + 1) * NS * NK];
byte nxt[(MAXE + 1) * NS];      /* next free slot of leader e in stream s */
byte reprop[(MAXE + 1) * NS];   /* slots [0, reprop] must be on a majority to open */
bool opened[MAXE + 1];
byte dptr[(MAXE + 1) * NS * NR];  /* next slot to send, per leader, stream, acceptor */
bool decided[MAXE + 1];
bool fo_done[MAXE + 1];  /* failover e opened its leader or gave up */
bool noroom[MAXE + 1];   /* model bound: no slot left for a barrier */

/* The decided record (rec_ep, V): inV[x], V[x]. */
byte rec_ep = 1;
bool inV[MAXE + 1];
byte V[MAXE + 1];

/* Transactions, named by ts. */
byte clock = 1;
bool acked[MAXTS];
byte nacked;            /* how many are acknowledged (drives when failovers start) */
bool inst[MAXTS];       /* state of the newest opened leader */
byte inst_ep = 1;       /* ... and its epoch */
bool newst[(MAXE + 1) * MAXTS];  /* state each leader opens with */

inline majority_prefix_key(e, t, k, g, st) {
  /* g = max key over the contiguous majority-accepted prefix of stream t */
  g = 0; st = 0;
  for (k : 0 .. NK - 1) {
    if
    :: st -> skip
    :: !st && NBITS(p_mask[LSLOT(e, t, k)]) < MAJ -> st = 1
    :: !st && NBITS(p_mask[LSLOT(e, t, k)]) >= MAJ ->
       if
       :: p_kind[LSLOT(e, t, k)] == K_TXN && KEY(p_ep[LSLOT(e, t, k)], p_ts[LSLOT(e, t, k)]) > g ->
          g = KEY(p_ep[LSLOT(e, t, k)], p_ts[LSLOT(e, t, k)])
       :: p_kind[LSLOT(e, t, k)] == K_BAR && KEY(p_ep[LSLOT(e, t, k)], 0) > g ->
          g = KEY(p_ep[LSLOT(e, t, k)], 0)
       :: else -> skip
       fi
    fi
  }
}

proctype Leader(byte e) {
  byte s, k, r, t, g, w, x;
  bool st;
  do
  :: /* propose a new transaction batch in stream s */
     opened[e] && clock < MAXTS ->
     atomic {
       if :: s = 0 :: s = 1 fi;
       if
       :: nxt[e * NS + s] < NK ->
          p_kind[LSLOT(e, s, nxt[e * NS + s])] = K_TXN;
          p_ep[LSLOT(e, s, nxt[e * NS + s])] = e;
          p_ts[LSLOT(e, s, nxt[e * NS + s])] = clock;
          nxt[e * NS + s]++;
          clock++
       :: else -> skip
       fi
     }
  :: /* deliver the next accept of stream s to acceptor r (FIFO per connection) */
     atomic {
       if :: s = 0 :: s = 1 fi;
       if :: r = 0 :: r = 1 :: r = 2 fi;
       k = dptr[(e * NS + s) * NR + r];
       if
       :: k < NK && p_kind[LSLOT(e, s, k)] != K_EMPTY ->
          dptr[(e * NS + s) * NR + r] = k + 1;
          if
          :: prom[r] <= e ->
             prom[r] = e;
             a_bal[ASLOT(r, s, k)] = e;
             a_kind[ASLOT(r, s, k)] = p_kind[LSLOT(e, s, k)];
             a_ep[ASLOT(r, s, k)] = p_ep[LSLOT(e, s, k)];
             a_ts[ASLOT(r, s, k)] = p_ts[LSLOT(e, s, k)];
             p_mask[LSLOT(e, s, k)] = p_mask[LSLOT(e, s, k)] | (1 << r)
          :: else -> skip  /* fenced: a newer epoch was promised */
          fi
       :: else -> skip
       fi
     }
#ifdef LOSSY
  :: /* the network loses the next accept of stream s to r: a hole there */
     atomic {
       if :: s = 0 :: s = 1 fi;
       if :: r = 0 :: r = 1 :: r = 2 fi;
       k = dptr[(e * NS + s) * NR + r];
       if
       :: k < NK && p_kind[LSLOT(e, s, k)] != K_EMPTY -> dptr[(e * NS + s) * NR + r] = k + 1
       :: else -> skip
       fi
     }
  :: /* reconnect: resend stream s to r from the start (duplicates are harmless) */
     atomic {
       if :: s = 0 :: s = 1 fi;
       if :: r = 0 :: r = 1 :: r = 2 fi;
       dptr[(e * NS + s) * NR + r] = 0
     }
#endif
  :: /* open once everything re-proposed (and the barriers) is on a majority */
     !opened[e] && !noroom[e] ->
     d_step {
       w = 1;
       for (t : 0 .. NS - 1) {
         for (k : 0 .. NK - 1) {
           if
#ifndef BUG_OPEN_BEFORE_REPROPOSED
           :: k <= reprop[e * NS + t] && NBITS(p_mask[LSLOT(e, t, k)]) < MAJ -> w = 0
#endif
           :: else -> skip
           fi
         }
       };
       if
       :: w ->
          for (x : 1 .. MAXTS - 1) {
            /* no acknowledged transaction lost, states never shrink */
            assert(!acked[x] || newst[e * MAXTS + x]);
            assert(!inst[x] || newst[e * MAXTS + x]);
          };
          if
          :: e > inst_ep ->
             for (x : 1 .. MAXTS - 1) { inst[x] = newst[e * MAXTS + x] };
             inst_ep = e
          :: else -> skip
          fi;
          opened[e] = 1;
          fo_done[e] = 1;
          printf("MSC: epoch %d opened\n", e)
       :: else -> skip
       fi;
    skip  /* loop exits must land inside the d_step */
  }
  :: /* acknowledge a transaction of this epoch once the watermark passed it */
     opened[e] ->
     d_step {
       w = 255;
       for (t : 0 .. NS - 1) {
         majority_prefix_key(e, t, k, g, st);
#ifndef BUG_ACK_ON_ONE_STREAM
         if :: g < w -> w = g :: else -> skip fi
#else
         if :: t == 0 -> w = g :: else -> skip fi
#endif
       };
       for (t : 0 .. NS - 1) {
         for (k : 0 .. NK - 1) {
           if
           :: p_kind[LSLOT(e, t, k)] == K_TXN && p_ep[LSLOT(e, t, k)] == e &&
              KEY(e, p_ts[LSLOT(e, t, k)]) <= w ->
              if :: !acked[p_ts[LSLOT(e, t, k)]] -> nacked++; printf("MSC: ack ts %d epoch %d\n", p_ts[LSLOT(e, t, k)], e) :: else -> skip fi;
              acked[p_ts[LSLOT(e, t, k)]] = 1;
              /* acknowledged after a newer leader opened: it must be in that state */
              assert(inst_ep <= e || inst[p_ts[LSLOT(e, t, k)]])
           :: else -> skip
           fi
         }
       };
    skip  /* loop exits must land inside the d_step */
  }
#ifdef CRASH
  :: break  /* the leader stops (crash) */
#endif
  od
}

proctype Failover(byte e) {
  byte ec, q, r, s, k, x, t, g, bep, reach, last;
  bool vin[MAXE + 1];
  byte vts[MAXE + 1];
  byte m_bal[NS * NK];
  byte m_kind[NS * NK];
  byte m_ep[NS * NK];
  byte m_ts[NS * NK];
  bool stop;

  /* start at a nondeterministic point of the run */
  /* (a wait that never comes true is a run where this failover never happens) */
  if :: q = 0 :: q = 1 :: q = 2 :: q = 3 :: q = 4 :: q = 5 :: q = 6 fi;
  if
  :: q == 0                                      /* at once, racing everything */
  :: (q == 1 || q == 2) && nacked >= 1           /* while the previous leader works */
  :: q == 3 && fo_done[e - 1]                    /* after the previous failover */
  :: (q == 4 || q == 5) && fo_done[e - 1] && nacked >= 2
  :: q == 6 && fo_done[e - 1] && nacked >= 4
  fi;

  /* the latest decided record (e_c, V_c) */
  atomic {
    ec = rec_ep;
    for (x : 0 .. MAXE) { vin[x] = inV[x]; vts[x] = V[x] }
  };
  if :: ec >= e -> goto done :: else -> skip fi;

  /* 1. Prepare(e) on a majority: each member promises and returns its slots */
  if :: q = 3 :: q = 5 :: q = 6 :: q = 7 fi;
  r = 0;
  do
  :: r < NR ->
     if
     :: (q >> r) & 1 ->
        atomic {
          if
          :: prom[r] < e ->
             prom[r] = e;
             /* 2. per slot keep the value of the highest ballot */
             for (s : 0 .. NS - 1) {
               for (k : 0 .. NK - 1) {
                 if
                 :: a_kind[ASLOT(r, s, k)] != K_EMPTY && a_bal[ASLOT(r, s, k)] > m_bal[SLOT(s, k)] ->
                    m_bal[SLOT(s, k)] = a_bal[ASLOT(r, s, k)];
                    m_kind[SLOT(s, k)] = a_kind[ASLOT(r, s, k)];
                    m_ep[SLOT(s, k)] = a_ep[ASLOT(r, s, k)];
                    m_ts[SLOT(s, k)] = a_ts[ASLOT(r, s, k)]
                 :: else -> skip
                 fi
               }
             }
          :: else -> goto done  /* a newer epoch was promised: give up */
          fi
        }
     :: else -> skip
     fi;
     r++
  :: else -> break
  od;
  skip;  /* a jump may not land on a d_step */

  d_step {
    /* 3. per stream, walk from the start to find the reach; 4. G' = min */
    g = 255;
    for (s : 0 .. NS - 1) {
      reach = 0; bep = 0; stop = 0;
      for (k : 0 .. NK - 1) {
        if
        :: stop -> skip
        :: !stop && m_kind[SLOT(s, k)] == K_EMPTY -> stop = 1                    /* hole */
#ifndef BUG_WALK_PAST_STALE
        :: !stop && m_kind[SLOT(s, k)] != K_EMPTY && m_bal[SLOT(s, k)] < bep -> stop = 1  /* stale */
#else
        :: !stop && m_kind[SLOT(s, k)] != K_EMPTY && m_bal[SLOT(s, k)] < bep -> skip
#endif
        :: !stop && m_kind[SLOT(s, k)] == K_NOOP && m_bal[SLOT(s, k)] >= bep -> skip
        :: !stop && m_kind[SLOT(s, k)] == K_BAR && m_bal[SLOT(s, k)] >= bep -> bep = m_ep[SLOT(s, k)]
        :: !stop && m_kind[SLOT(s, k)] == K_TXN && m_bal[SLOT(s, k)] >= bep ->
           x = m_ep[SLOT(s, k)];
           if
           :: x == ec ->
              if :: KEY(x, m_ts[SLOT(s, k)]) > reach -> reach = KEY(x, m_ts[SLOT(s, k)]) :: else -> skip fi
           :: x < ec && vin[x] && m_ts[SLOT(s, k)] <= vts[x] ->
              if :: KEY(x, m_ts[SLOT(s, k)]) > reach -> reach = KEY(x, m_ts[SLOT(s, k)]) :: else -> skip fi
           :: x < ec && vin[x] && m_ts[SLOT(s, k)] > vts[x] ->
              /* voided, but proves the stream held all of x up to the cut */
              if :: KEY(x, vts[x]) > reach -> reach = KEY(x, vts[x]) :: else -> skip fi
           :: else -> skip  /* epoch voided entirely (or newer: the CAS will fail) */
           fi
        fi
      };
      if :: reach < g -> g = reach :: else -> skip fi
    };
    /* V' = V_c plus e_c, cut at G' */
    vin[ec] = 1; vts[ec] = 31;
    for (x : 1 .. MAXE) {
      if
      :: vin[x] && x > g / 32 -> vin[x] = 0; vts[x] = 0
      :: vin[x] && x == g / 32 && vts[x] > g % 32 -> vts[x] = g % 32
      :: else -> skip
      fi
    };
    skip  /* loop exits must land inside the d_step */
  };

  /* 5. decide (e, V') by compare-and-set */
  atomic {
    if
    :: rec_ep == ec ->
       rec_ep = e;
       for (x : 0 .. MAXE) { inV[x] = vin[x]; V[x] = vts[x] };
       decided[e] = 1;
       printf("MSC: decided epoch %d G=(%d,%d)\n", e, g / 32, g % 32)
    :: else -> goto done
    fi
  };

  /* 6. re-propose what was found as found, no-ops in holes, a barrier after */
  d_step {
    for (s : 0 .. NS - 1) {
      last = 0;
      for (k : 0 .. NK - 1) {
        if :: m_kind[SLOT(s, k)] != K_EMPTY -> last = k + 1 :: else -> skip fi
      };
      for (k : 0 .. NK - 1) {
        if
        :: k < last && m_kind[SLOT(s, k)] != K_EMPTY ->
           p_kind[LSLOT(e, s, k)] = m_kind[SLOT(s, k)];
           p_ep[LSLOT(e, s, k)] = m_ep[SLOT(s, k)];
           p_ts[LSLOT(e, s, k)] = m_ts[SLOT(s, k)]
        :: k < last && m_kind[SLOT(s, k)] == K_EMPTY ->
           p_kind[LSLOT(e, s, k)] = K_NOOP; p_ep[LSLOT(e, s, k)] = e
        :: else -> skip
        fi
      };
      /* the model's slot bound: with no room for the barrier this epoch cannot open */
      if
      :: last < NK ->
         p_kind[LSLOT(e, s, last)] = K_BAR; p_ep[LSLOT(e, s, last)] = e;
         reprop[e * NS + s] = last; nxt[e * NS + s] = last + 1
      :: else -> noroom[e] = 1; reprop[e * NS + s] = NK - 1; nxt[e * NS + s] = NK
      fi
    };
    /* the new leader's state: valid entries with key at or below G' */
    for (s : 0 .. NS - 1) {
      for (k : 0 .. NK - 1) {
        if
        :: m_kind[SLOT(s, k)] == K_TXN && vin[m_ep[SLOT(s, k)]] &&
           m_ts[SLOT(s, k)] <= vts[m_ep[SLOT(s, k)]] && KEY(m_ep[SLOT(s, k)], m_ts[SLOT(s, k)]) <= g ->
           newst[e * MAXTS + m_ts[SLOT(s, k)]] = 1
        :: else -> skip
        fi
      }
    };
    skip  /* loop exits must land inside the d_step */
  };
  run Leader(e);
done:
  fo_done[e] = 1
}

init {
  atomic {
    /* epoch 1 is decided with an empty cut and opens on empty streams */
    decided[1] = 1;
    fo_done[1] = 1;
    opened[1] = 1;
    run Leader(1);
    run Failover(2);
    run Failover(3);
    run Failover(4)
  }
}
