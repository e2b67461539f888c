/*
 * Model of Rolis replication with epoch failover (docs/replication.md,
 * "Invariants" and "The failover model"). check.sh runs it with spin.
 *
 * Actors: NR acceptors (members), NS streams of NK slots each, leaders
 * indexed by lid (lep[lid] is the epoch; two lids may share an epoch: two
 * candidates duelling for it), one Failover driver per lid > 0, and the
 * members' own steps (follower replay, compaction). Epoch 1 (lid 0) starts
 * open with the decided record (1, {}). Failover drivers run concurrently
 * with each other and with every earlier leader, which keeps proposing,
 * sending accepts and acknowledging until it is fenced. Links are FIFO per
 * (leader, stream, member); with LOSSY an accept may be lost and a link may
 * reset (resend from the start); with CRASH a leader may stop.
 *
 * Values: kind (TXN: one transaction; HB: an empty batch, a heartbeat; NOOP;
 * BAR: a barrier), epoch of the leader that created it, and ts. ts comes from
 * one global clock, so a transaction is named by its ts. Keys (epoch, ts)
 * are ordered epoch first: KEY(e, ts) = e * 32 + ts.
 *
 * Features (each on by default, off with -DNO_<name>, to bound an exhaustive
 * search): HEARTBEAT (empty batches at the ts floor), REPLAY (followers
 * replay up to the leader's G), COMPACT (members drop a replayed prefix and
 * keep its base), CHANGE (one membership change: member NR-1 is removed),
 * DUEL (a second candidate for epoch 2).
 *
 * Asserted (docs/replication.md, "Invariants"):
 *   I1  one leader per epoch: no two lids of one epoch open (fencing of
 *       older leaders is checked through its consequence, I3 on late acks);
 *   I2  a chosen slot (accepted by a majority at one ballot) never gets
 *       another value chosen;
 *   I3  every acknowledged transaction is in the state of every leader that
 *       opens later, and one acknowledged after a newer leader opened is in
 *       that leader's state;
 *   I0  decided records form a chain: each is computed from the record it
 *       replaces (the compare-and-set);
 *   I4  states only grow: of two opened leaders the newer epoch's state
 *       contains the older's, and both hold exactly the same transactions of
 *       epochs older than both (older history is kept exactly); a leader
 *       opens only once its whole state is chosen (on a majority);
 *   P   a state holds, per epoch, a prefix (by ts) of that epoch's
 *       transactions (the cut is by key);
 *   I5  what a follower replayed is in the state of every leader that opens
 *       later (and of one that opened before it replayed);
 *   I6  a follower replays only the value chosen for the slot.
 *
 * Mutants (-DBUG_<name>, each must be caught; check.sh lists them).
 */

#ifndef NR
#define NR 3
#endif
#ifndef NS
#define NS 2
#endif
#ifndef NK
#define NK 6
#endif
#ifndef MAXTS
#define MAXTS 12
#endif
/* leaders: lid 0 = epoch 1, lid 1 = epoch 2, lid 2 = epoch 2 (the duel), lid 3 = epoch 3, lid 4 = epoch 4 */
#ifndef NL
#define NL 4
#endif
#define MAXE 4
/* leader l proposes only below ROOM(l), so that every later failover has a slot for its barrier */
#define ROOM(l) (NK - (NL - 1 - (l)))

#define K_EMPTY 0
#define K_TXN   1
#define K_NOOP  2
#define K_BAR   3
#define K_HB    4

#define KEY(e, t) ((e) * 32 + (t))
#define SLOT(s, k) ((s) * NK + (k))
#define ASLOT(r, s, k) ((r) * NS * NK + (s) * NK + (k))
#define LSLOT(l, s, k) ((l) * NS * NK + (s) * NK + (k))
#define NBITS(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define ALL ((1 << NR) - 1)

/* Configurations: 0 = every member; 1 = after the one change (member NR-1 removed). */
#ifdef BUG_TWO_MEMBERS_AT_ONCE
#define CFG1 1              /* two members removed in one step: {0} */
#else
#define CFG1 (ALL >> 1)     /* one member removed: {0, 1} */
#endif
#define CMASK(c) ((c) == 0 -> ALL : CFG1)
#define HELD(m, c) (NBITS((m) & CMASK(c)) >= NBITS(CMASK(c)) / 2 + 1)
/* the count of leader l: the configuration of its record; both while it changes it */
#define LHELD(l, m) (ljoint[l] -> (HELD(m, 0) && HELD(m, 1)) : HELD(m, lcfg[l]))

/* Acceptors (members). */
byte prom[NR];
byte a_bal[NR * NS * NK];
byte a_kind[NR * NS * NK];
byte a_ep[NR * NS * NK];
byte a_ts[NR * NS * NK];
/* compaction: first slot held, and the reach and barrier epoch of the dropped prefix */
byte a_cp[NR * NS];
byte a_bk[NR * NS];
byte a_bb[NR * NS];
/* follower replay: next slot per stream, G learned and the lid whose G it is, replayed set */
byte rp[NR * NS];
byte fg[NR];
byte fgl[NR];
bool rpl[NR * MAXTS];

/* Leaders: what each proposed per slot and who accepted it. */
byte lep[NL];
byte p_kind[NL * NS * NK];
byte p_ep[NL * NS * NK];
byte p_ts[NL * NS * NK];
byte p_mask[NL * NS * NK];
byte nxt[NL * NS];       /* next free slot */
byte lastts[NL * NS];    /* ts of the newest batch the leader made in the stream */
byte rfirst[NL * NS];    /* re-proposed slots [rfirst, reprop] must be on a majority to open */
byte reprop[NL * NS];
byte dptr[NL * NS * NR]; /* next slot to send, per leader, stream, member */
byte lG[NL];             /* the leader's watermark G */
byte lcfg[NL];
bool ljoint[NL];
bool opened[NL];
byte ackep = 0;          /* the newest epoch that acknowledged a transaction */
bool fo_done[NL];        /* failover lid opened its leader or gave up */
bool noroom[NL];         /* model bound: no slot left for a barrier */
/* each leader's decided record (its own epoch is valid whole) */
bool lvin[NL * (MAXE + 1)];
byte lvts[NL * (MAXE + 1)];
#define VALID(l, ep, t) ((ep) == lep[l] || (lvin[(l) * (MAXE + 1) + (ep)] && (t) <= lvts[(l) * (MAXE + 1) + (ep)]))

/* The decided record (rec_ep, rec_cfg, V), changed only by compare-and-set. */
byte rec_ep = 1;
byte rec_cfg;
bool inV[MAXE + 1];
byte V[MAXE + 1];

/* Chosen values per slot (I2). */
byte ch_kind[NS * NK];
byte ch_ep[NS * NK];
byte ch_ts[NS * NK];

/* Transactions, named by ts. */
byte clock = 1;
byte tsep[MAXTS];         /* epoch of the leader that created it */
bool acked[MAXTS];
byte nacked;              /* how many are acknowledged (drives when failovers start) */
bool newst[NL * MAXTS];   /* state each leader opens with */

/* I3/I5 for a transaction shown (acknowledged or replayed) by a leader of epoch e:
   every leader of a newer epoch that opened already holds it */
inline shown_after_newer_opened(e, x, l2) {
  for (l2 : 0 .. NL - 1) {
    assert(!opened[l2] || lep[l2] <= e || newst[l2 * MAXTS + x])  /* I3 */
  }
}

/* I5 for a transaction replayed under leader l: it is in the state of every
   opened leader of a newer epoch, and of l itself if it is older than l */
inline replayed_check(l, x, l2) {
  for (l2 : 0 .. NL - 1) {
    assert(!opened[l2] || lep[l2] < lep[l] || (lep[l2] == lep[l] && tsep[x] >= lep[l]) ||
           newst[l2 * MAXTS + x])  /* I5 */
  }
}

/* I2: slot (s, k) of leader l just gained a member: if that makes it chosen, it is the one value */
inline chosen_check(l, s, k) {
  if
  :: LHELD(l, p_mask[LSLOT(l, s, k)]) ->
     if
     :: ch_kind[SLOT(s, k)] == K_EMPTY ->
        ch_kind[SLOT(s, k)] = p_kind[LSLOT(l, s, k)];
        ch_ep[SLOT(s, k)] = p_ep[LSLOT(l, s, k)];
        ch_ts[SLOT(s, k)] = p_ts[LSLOT(l, s, k)]
     :: else ->
        assert(ch_kind[SLOT(s, k)] == p_kind[LSLOT(l, s, k)] && ch_ep[SLOT(s, k)] == p_ep[LSLOT(l, s, k)] &&
               ch_ts[SLOT(s, k)] == p_ts[LSLOT(l, s, k)])  /* I2 */
     fi
  :: else -> skip
  fi
}

inline majority_prefix_key(l, t, k, g, st) {
  /* g = max key over the contiguous majority-held prefix of stream t (from rfirst) */
  g = 0; st = 0;
  for (k : 0 .. NK - 1) {
    if
    :: st || k < rfirst[l * NS + t] -> skip
    :: !st && k >= rfirst[l * NS + t] && !LHELD(l, p_mask[LSLOT(l, t, k)]) -> st = 1
    :: !st && k >= rfirst[l * NS + t] && LHELD(l, p_mask[LSLOT(l, t, k)]) ->
       if
       :: (p_kind[LSLOT(l, t, k)] == K_TXN || p_kind[LSLOT(l, t, k)] == K_HB) &&
          KEY(p_ep[LSLOT(l, t, k)], p_ts[LSLOT(l, t, k)]) > g ->
          g = KEY(p_ep[LSLOT(l, t, k)], p_ts[LSLOT(l, t, k)])
       :: p_kind[LSLOT(l, t, k)] == K_BAR && KEY(p_ep[LSLOT(l, t, k)], 0) > g ->
          g = KEY(p_ep[LSLOT(l, t, k)], 0)
       :: else -> skip
       fi
    fi
  }
}

/* dead locals reset at the end of each step, so that they do not multiply states */
#define FORGET_L s = 0; r = 0; k = 0; t = 0; g = 0; w = 0; x = 0; st = 0
#define FORGET_M r = 0; s = 0; k = 0; x = 0; l = 0; cp = 0; bk = 0; bb = 0; st = 0

proctype Leader(byte l) {
  byte e, s, k, r, t, g, w, x;
  bool st;
  e = lep[l];
  do
  :: /* a worker commits a transaction: the next slot of stream s */
     atomic {
       opened[l] && clock < MAXTS ->
       if :: s = 0 :: s = NS - 1 fi;
       if
       :: nxt[l * NS + s] < ROOM(l) ->
          p_kind[LSLOT(l, s, nxt[l * NS + s])] = K_TXN;
          p_ep[LSLOT(l, s, nxt[l * NS + s])] = e;
          p_ts[LSLOT(l, s, nxt[l * NS + s])] = clock;
          tsep[clock] = e;
          lastts[l * NS + s] = clock;
          nxt[l * NS + s]++;
          clock++
       :: else -> skip
       fi;
       FORGET_L
     }
#ifndef NO_HEARTBEAT
  :: /* a stream that holds G back sends an empty batch at its ts floor: below
        every ts still to come (the clock moved since its newest batch) */
     opened[l] ->
     atomic {
       if :: s = 0 :: s = NS - 1 fi;
       if
       :: nxt[l * NS + s] < ROOM(l) && clock - 1 > lastts[l * NS + s] ->
          p_kind[LSLOT(l, s, nxt[l * NS + s])] = K_HB;
          p_ep[LSLOT(l, s, nxt[l * NS + s])] = e;
#ifndef BUG_HEARTBEAT_AHEAD
          p_ts[LSLOT(l, s, nxt[l * NS + s])] = clock - 1;
#else
          p_ts[LSLOT(l, s, nxt[l * NS + s])] = clock;  /* a ts the worker may still assign */
#endif
          lastts[l * NS + s] = clock - 1;
          nxt[l * NS + s]++
       :: else -> skip
       fi;
       FORGET_L
     }
#endif
  :: /* deliver the next accept of stream s to member r (FIFO per link); it carries G */
     atomic {
       if :: s = 0 :: s = NS - 1 fi;
       if :: r = 0 :: r = 1 :: r = NR - 1 fi;
       k = dptr[(l * NS + s) * NR + r];
       if
       :: k < nxt[l * NS + s] && p_kind[LSLOT(l, s, k)] == K_EMPTY -> dptr[(l * NS + s) * NR + r] = k + 1
       :: k < NK && p_kind[LSLOT(l, s, k)] != K_EMPTY ->
          dptr[(l * NS + s) * NR + r] = k + 1;
          if
          :: prom[r] <= e && k >= a_cp[r * NS + s] ->
             prom[r] = e;
             a_bal[ASLOT(r, s, k)] = e;
             a_kind[ASLOT(r, s, k)] = p_kind[LSLOT(l, s, k)];
             a_ep[ASLOT(r, s, k)] = p_ep[LSLOT(l, s, k)];
             a_ts[ASLOT(r, s, k)] = p_ts[LSLOT(l, s, k)];
             p_mask[LSLOT(l, s, k)] = p_mask[LSLOT(l, s, k)] | (1 << r);
             fg[r] = lG[l]; fgl[r] = l;
             chosen_check(l, s, k)
          :: prom[r] <= e && k < a_cp[r * NS + s] -> skip  /* compacted: replayed and chosen already */
          :: else -> skip  /* fenced: a newer epoch was promised */
          fi
       :: else -> skip
       fi;
       FORGET_L
     }
#ifndef NO_REPLAY
  :: /* the leader's G reaches member r without a new slot (the next heartbeat's
        accept repeats it; the model's slots are too few to send one each time) */
     atomic {
       opened[l] ->
       if :: r = 0 :: r = 1 :: r = NR - 1 fi;
       if :: prom[r] <= e -> fg[r] = lG[l]; fgl[r] = l :: else -> skip fi;
       FORGET_L
     }
#endif
#ifdef LOSSY
  :: /* the network loses the next accept of stream s to r: a hole there */
     atomic {
       if :: s = 0 :: s = NS - 1 fi;
       if :: r = 0 :: r = 1 :: r = NR - 1 fi;
       k = dptr[(l * NS + s) * NR + r];
       if
       :: k < NK && p_kind[LSLOT(l, s, k)] != K_EMPTY -> dptr[(l * NS + s) * NR + r] = k + 1
       :: else -> skip
       fi;
       FORGET_L
     }
  :: /* reconnect: resend stream s to r from the start (duplicates are harmless) */
     atomic {
       if :: s = 0 :: s = NS - 1 fi;
       if :: r = 0 :: r = 1 :: r = NR - 1 fi;
       dptr[(l * NS + s) * NR + r] = 0;
       FORGET_L
     }
#endif
  :: /* open once everything re-proposed (and the barriers) is on a majority */
     !opened[l] && !noroom[l] ->
     d_step {
       w = 1;
       for (t : 0 .. NS - 1) {
         for (k : 0 .. NK - 1) {
           if
#ifndef BUG_OPEN_BEFORE_REPROPOSED
           :: k >= rfirst[l * NS + t] && k <= reprop[l * NS + t] && p_kind[LSLOT(l, t, k)] != K_EMPTY &&
              !LHELD(l, p_mask[LSLOT(l, t, k)]) -> w = 0
#endif
           :: else -> skip
           fi
         }
       };
       if
       :: w ->
          for (x : 1 .. MAXTS - 1) {
            assert(!acked[x] || newst[l * MAXTS + x]);                         /* I3 */
            /* I4 (why): the state is chosen (on a majority) before the leader opens */
            st = !newst[l * MAXTS + x];
            for (t : 0 .. NS * NK - 1) { st = st || (ch_kind[t] == K_TXN && ch_ts[t] == x) };
            assert(st);  /* I4 */
            for (r : 0 .. NR - 1) { assert(!rpl[r * MAXTS + x] || newst[l * MAXTS + x]) };  /* I5 */
            for (t : 1 .. MAXTS - 1) {                                          /* P: per-epoch prefix */
              assert(!newst[l * MAXTS + x] || t >= x || tsep[t] != tsep[x] || newst[l * MAXTS + t])  /* P */
            };
            for (g : 0 .. NL - 1) {
              if
              :: opened[g] ->
                 assert(lep[g] != e);                                           /* I1: one leader per epoch */
                 assert(lep[g] > e || !newst[g * MAXTS + x] || newst[l * MAXTS + x]);   /* I4 */
                 assert(lep[g] < e || !newst[l * MAXTS + x] || newst[g * MAXTS + x]);  /* I4 */
                 assert(tsep[x] >= lep[g] || tsep[x] >= e ||                    /* I4: older history exact */
                        newst[g * MAXTS + x] == newst[l * MAXTS + x])
              :: else -> skip
              fi
            }
          };
          opened[l] = 1;
          fo_done[l] = 1;
          printf("MSC: lid %d (epoch %d) opened\n", l, e)
       :: else -> skip
       fi;
    FORGET_L  /* dead locals reset (fewer states); loop exits must land inside the d_step */
  }
  :: /* acknowledge transactions of this epoch once G passed them */
     opened[l] ->
     d_step {
       w = 255;
       for (t : 0 .. NS - 1) {
         majority_prefix_key(l, t, k, g, st);
#ifndef BUG_ACK_ON_ONE_STREAM
         if :: g < w -> w = g :: else -> skip fi
#else
         if :: t == 0 -> w = g :: else -> skip fi
#endif
       };
       if :: w > lG[l] -> lG[l] = w :: else -> skip fi;
       for (t : 0 .. NS - 1) {
         for (k : 0 .. NK - 1) {
           if
           :: p_kind[LSLOT(l, t, k)] == K_TXN && p_ep[LSLOT(l, t, k)] == e && KEY(e, p_ts[LSLOT(l, t, k)]) <= w ->
              x = p_ts[LSLOT(l, t, k)];
              if :: !acked[x] -> nacked++; printf("MSC: ack ts %d epoch %d\n", x, e) :: else -> skip fi;
              if :: e > ackep -> ackep = e :: else -> skip fi;
              acked[x] = 1;
              shown_after_newer_opened(e, x, g)
           :: else -> skip
           fi
         }
       };
    FORGET_L  /* dead locals reset (fewer states); loop exits must land inside the d_step */
  }
#ifndef NO_CHANGE
  :: /* one membership change (docs/replication.md, "Membership"): member NR-1 leaves.
        The leader counts both configurations from before the decision on. */
     atomic {
       opened[l] && rec_ep == e && rec_cfg == 0 && lcfg[l] == 0 && nacked >= 2 ->
       ljoint[l] = 1;
       rec_cfg = 1;
       printf("MSC: lid %d decided configuration 1\n", l)
     }
#endif
#ifdef CRASH
  :: break  /* the leader stops (crash) */
#endif
  od
}

#if !defined(NO_REPLAY) || !defined(NO_COMPACT)
/* The members' own steps: follower replay up to G, and compaction. */
proctype Members() {
  byte r, s, k, x, l, cp, bk, bb;
  bool st;
  do
#ifndef NO_REPLAY
  :: /* replay each stream in order: a slot held at the ballot of the leader whose G
        it is (I6), with key at or below that G (I5); voided entries are skipped */
     atomic {
       if :: r = 0 :: r = 1 :: r = NR - 1 fi;
       l = fgl[r];
       for (s : 0 .. NS - 1) {
         st = 0;
         for (k : 0 .. NK - 1) {
           if
           :: st || k < rp[r * NS + s] -> skip
           :: else ->
              if
              :: a_kind[ASLOT(r, s, k)] != K_EMPTY &&
#ifndef BUG_REPLAY_OLD_BALLOT
                 a_bal[ASLOT(r, s, k)] == lep[l] &&
#endif
#ifndef BUG_REPLAY_AHEAD_OF_G
                 KEY(a_ep[ASLOT(r, s, k)], a_ts[ASLOT(r, s, k)]) <= fg[r] &&  /* no-ops and barriers have ts 0 */
#endif
                 1 ->
                 /* I6: the value replayed is the value chosen */
                 assert(a_kind[ASLOT(r, s, k)] != K_TXN || ch_kind[SLOT(s, k)] == a_kind[ASLOT(r, s, k)] && ch_ep[SLOT(s, k)] == a_ep[ASLOT(r, s, k)] &&
                        ch_ts[SLOT(s, k)] == a_ts[ASLOT(r, s, k)]);  /* I6 */
                 x = a_ts[ASLOT(r, s, k)];
                 if
                 :: a_kind[ASLOT(r, s, k)] == K_TXN &&
#ifndef BUG_REPLAY_IGNORES_CUT
                    VALID(l, a_ep[ASLOT(r, s, k)], x) &&
#endif
                    !rpl[r * MAXTS + x] ->
                    rpl[r * MAXTS + x] = 1;
                    replayed_check(l, x, bk)
                 :: else -> skip
                 fi;
                 rp[r * NS + s] = k + 1
              :: else -> st = 1
              fi
           fi
         }
       };
       skip;
       FORGET_M
     }
#endif
#ifndef NO_COMPACT
  :: /* member r drops stream s's prefix that every member replayed, keeping its base:
        the walk's reach and barrier epoch over it (docs/replication.md, "Compaction") */
     atomic {
       if :: r = 0 :: r = 1 :: r = NR - 1 fi;
       if :: s = 0 :: s = NS - 1 fi;
       cp = NK;
       for (x : 0 .. NR - 1) { if :: rp[x * NS + s] < cp -> cp = rp[x * NS + s] :: else -> skip fi };
       l = fgl[r]; bk = a_bk[r * NS + s]; bb = a_bb[r * NS + s];
       for (k : 0 .. NK - 1) {
         if
         :: k >= a_cp[r * NS + s] && k < cp ->
            if
            :: a_kind[ASLOT(r, s, k)] == K_BAR -> bb = a_ep[ASLOT(r, s, k)]
            :: a_kind[ASLOT(r, s, k)] == K_TXN || a_kind[ASLOT(r, s, k)] == K_HB ->
               if
               :: VALID(l, a_ep[ASLOT(r, s, k)], a_ts[ASLOT(r, s, k)]) &&
                  KEY(a_ep[ASLOT(r, s, k)], a_ts[ASLOT(r, s, k)]) > bk ->
                  bk = KEY(a_ep[ASLOT(r, s, k)], a_ts[ASLOT(r, s, k)])
               :: !VALID(l, a_ep[ASLOT(r, s, k)], a_ts[ASLOT(r, s, k)]) && a_ep[ASLOT(r, s, k)] < lep[l] &&
                  lvin[l * (MAXE + 1) + a_ep[ASLOT(r, s, k)]] &&
                  KEY(a_ep[ASLOT(r, s, k)], lvts[l * (MAXE + 1) + a_ep[ASLOT(r, s, k)]]) > bk ->
                  bk = KEY(a_ep[ASLOT(r, s, k)], lvts[l * (MAXE + 1) + a_ep[ASLOT(r, s, k)]])
               :: else -> skip
               fi
            :: else -> skip
            fi;
            a_kind[ASLOT(r, s, k)] = K_EMPTY; a_bal[ASLOT(r, s, k)] = 0;
            a_ep[ASLOT(r, s, k)] = 0; a_ts[ASLOT(r, s, k)] = 0
         :: else -> skip
         fi
       };
       if
       :: cp > a_cp[r * NS + s] -> a_cp[r * NS + s] = cp; a_bk[r * NS + s] = bk; a_bb[r * NS + s] = bb
       :: else -> skip
       fi;
       skip;
       FORGET_M
     }
#endif
  od
}
#endif

proctype Failover(byte l) {
  byte e, ec, cc, q, c, r, s, k, x, t, g, bep, reach, last;
  bool vin[MAXE + 1];
  byte vts[MAXE + 1];
  byte m_bal[NS * NK];
  byte m_kind[NS * NK];
  byte m_ep[NS * NK];
  byte m_ts[NS * NK];
  byte m_first[NS];
  byte m_bk[NS];
  byte m_bb[NS];
  byte wstop[NS];
  bool stop;
  e = lep[l];

  /* start at a nondeterministic point of the run */
  /* (a wait that never comes true is a run where this failover never happens) */
  /* (choose first, then wait: a random walk picks among the options enabled now) */
  if :: q = 0 :: q = 1 :: q = 2 :: q = 3 :: q = 4 :: q = 5 :: q = 6 fi;
  if
  :: q == 0                                      /* at once, racing everything */
  :: (q == 1 || q == 2) && nacked >= 1           /* while the previous leader works */
  :: q == 3 && fo_done[l - 1]                    /* after the previous failover */
  :: (q == 4 || q == 5) && fo_done[l - 1] && nacked >= 2
  :: q == 6 && fo_done[l - 1] && nacked >= 4
  fi;

  /* the latest decided record (e_c, cfg_c, V_c) */
  atomic {
    ec = rec_ep; cc = rec_cfg;
    for (x : 0 .. MAXE) { vin[x] = inV[x]; vts[x] = V[x] }
  };
  if :: ec >= e -> goto done :: else -> skip fi;
  /* a slow candidate (one time in four in a walk): it prepares only after a
     leader newer than the record it read has acknowledged */
  if :: q = 0 :: q = 0 :: q = 0 :: q = 1 fi;
  if :: q == 0 :: q == 1 && ackep > ec fi;

  /* 1. Prepare(e) on a majority of the record's configuration; the candidate c
        is one of them. Each member promises (an equal epoch too: a duel) and
        returns its slots and compaction base. */
  if :: q = 3 :: q = 5 :: q = 6 :: q = 7 :: q = 1 fi;
  if :: HELD(q, cc) -> skip :: else -> goto done fi;
  if :: (q & 1) -> c = 0 :: (q & 2) -> c = 1 :: (q & 4) -> c = 2 fi;
  r = 0;
  do
  :: r < NR ->
     if
     :: (q >> r) & 1 ->
        atomic {
          if
          :: prom[r] <= e ->
             prom[r] = e;
             for (s : 0 .. NS - 1) {
               if
               :: a_cp[r * NS + s] > m_first[s] ->
                  m_first[s] = a_cp[r * NS + s]; m_bk[s] = a_bk[r * NS + s]; m_bb[s] = a_bb[r * NS + s]
               :: else -> skip
               fi;
               /* 2. per slot keep the value of the highest ballot */
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
  /* the candidate must have replayed up to the quorum's compaction point */
  atomic {
    for (s : 0 .. NS - 1) {
      if :: rp[c * NS + s] < m_first[s] -> goto done :: else -> skip fi
    }
  };
  skip;  /* a jump may not land on a d_step */

  d_step {
    /* 3. per stream, walk from the compaction point to find the reach; 4. G' = min */
    g = 255;
    for (s : 0 .. NS - 1) {
#ifndef BUG_COMPACT_BASE_IGNORED
      reach = m_bk[s]; bep = m_bb[s];
#else
      reach = 0; bep = 0;
#endif
      stop = 0; wstop[s] = NK;
      for (k : 0 .. NK - 1) {
        if
        :: stop || k < m_first[s] -> skip
#ifndef BUG_WALK_SKIPS_HOLES
        :: !stop && k >= m_first[s] && m_kind[SLOT(s, k)] == K_EMPTY -> stop = 1; wstop[s] = k      /* hole */
#else
        :: !stop && k >= m_first[s] && m_kind[SLOT(s, k)] == K_EMPTY -> skip
#endif
        :: !stop && k >= m_first[s] && m_kind[SLOT(s, k)] != K_EMPTY && m_bal[SLOT(s, k)] < bep ->
           stop = 1; wstop[s] = k                                                                   /* stale */
        :: !stop && k >= m_first[s] && m_kind[SLOT(s, k)] == K_NOOP && m_bal[SLOT(s, k)] >= bep -> skip
        :: !stop && k >= m_first[s] && m_kind[SLOT(s, k)] == K_BAR && m_bal[SLOT(s, k)] >= bep -> bep = m_ep[SLOT(s, k)]
        :: !stop && k >= m_first[s] && (m_kind[SLOT(s, k)] == K_TXN || m_kind[SLOT(s, k)] == K_HB) &&
           m_bal[SLOT(s, k)] >= bep ->
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

  /* 5. decide (e, V') by compare-and-set on the record read in step 0 */
  atomic {
    if
#if defined(BUG_NO_CAS)
    :: rec_ep < e ->          /* only "no newer epoch decided": a blind write */
#elif defined(BUG_TWO_DECIDERS)
    :: (rec_ep == ec && rec_cfg == cc) || rec_ep == e ->  /* a second decider of the same epoch */
#else
    :: rec_ep == ec && rec_cfg == cc ->
#endif
       /* I0: records form a chain: each is computed from the record it replaces */
       assert(rec_ep == ec && rec_cfg == cc);  /* I0 */
       rec_ep = e;
       for (x : 0 .. MAXE) { inV[x] = vin[x]; V[x] = vts[x]; lvin[l * (MAXE + 1) + x] = vin[x]; lvts[l * (MAXE + 1) + x] = vts[x] };
       lcfg[l] = rec_cfg;
       printf("MSC: lid %d decided epoch %d G=(%d,%d)\n", l, e, g / 32, g % 32)
    :: else -> goto done
    fi
  };

  /* 6. re-propose what was found, as found; no-ops in holes; a barrier after */
  d_step {
    for (s : 0 .. NS - 1) {
      last = m_first[s];
      for (k : 0 .. NK - 1) {
        if :: k >= m_first[s] && m_kind[SLOT(s, k)] != K_EMPTY -> last = k + 1 :: else -> skip fi
      };
#ifdef BUG_BARRIER_AT_STOP
      if :: wstop[s] < last -> last = wstop[s] :: else -> skip fi;  /* the barrier overwrites slots past the stop */
#endif
      for (k : 0 .. NK - 1) {
        if
        :: k >= m_first[s] && k < last && m_kind[SLOT(s, k)] != K_EMPTY ->
#if defined(BUG_NO_REPROPOSE)
           skip  /* found values are left at their old ballots */
#elif defined(BUG_NOOP_OVERWRITES)
           if
           :: k < wstop[s] ->
              p_kind[LSLOT(l, s, k)] = m_kind[SLOT(s, k)]; p_ep[LSLOT(l, s, k)] = m_ep[SLOT(s, k)];
              p_ts[LSLOT(l, s, k)] = m_ts[SLOT(s, k)]
           :: else -> p_kind[LSLOT(l, s, k)] = K_NOOP; p_ep[LSLOT(l, s, k)] = e  /* past the stop: no-op over it */
           fi
#else
           p_kind[LSLOT(l, s, k)] = m_kind[SLOT(s, k)];
           p_ep[LSLOT(l, s, k)] = m_ep[SLOT(s, k)];
           p_ts[LSLOT(l, s, k)] = m_ts[SLOT(s, k)]
#endif
        :: k >= m_first[s] && k < last && m_kind[SLOT(s, k)] == K_EMPTY ->
           p_kind[LSLOT(l, s, k)] = K_NOOP; p_ep[LSLOT(l, s, k)] = e
        :: else -> skip
        fi
      };
      rfirst[l * NS + s] = m_first[s];
      /* the model's slot bound: with no room for the barrier this epoch cannot open */
      if
      :: last < NK ->
         p_kind[LSLOT(l, s, last)] = K_BAR; p_ep[LSLOT(l, s, last)] = e;
         reprop[l * NS + s] = last; nxt[l * NS + s] = last + 1
      :: else -> noroom[l] = 1; reprop[l * NS + s] = NK - 1; nxt[l * NS + s] = NK
      fi
    };
    /* the new leader's state: the candidate's replayed store and the found
       entries, those valid under (e, V') with key at or below G' */
    for (x : 1 .. MAXTS - 1) {
      if
      :: rpl[c * MAXTS + x] && VALID(l, tsep[x], x) && KEY(tsep[x], x) <= g -> newst[l * MAXTS + x] = 1
      :: else -> skip
      fi
    };
    for (s : 0 .. NS - 1) {
      for (k : 0 .. NK - 1) {
        if
        :: k >= m_first[s] && m_kind[SLOT(s, k)] == K_TXN && VALID(l, m_ep[SLOT(s, k)], m_ts[SLOT(s, k)]) &&
           KEY(m_ep[SLOT(s, k)], m_ts[SLOT(s, k)]) <= g ->
           newst[l * MAXTS + m_ts[SLOT(s, k)]] = 1
        :: else -> skip
        fi
      }
    };
    skip  /* loop exits must land inside the d_step */
  };
  run Leader(l);
done:
  fo_done[l] = 1
}

init {
  atomic {
    lep[0] = 1; lep[1] = 2;
#if NL > 2
#ifndef NO_DUEL
    lep[2] = 2;
#else
    lep[2] = 3;
#endif
#endif
#if NL > 3
    lep[3] = lep[2] + 1;
#endif
#if NL > 4
    lep[4] = lep[3] + 1;
#endif
    /* epoch 1 is decided with an empty cut and opens on empty streams */
    fo_done[0] = 1;
    opened[0] = 1;
    run Leader(0);
#if !defined(NO_REPLAY) || !defined(NO_COMPACT)
    run Members();
#endif
    run Failover(1);
#if NL > 2
    run Failover(2);
#endif
#if NL > 3
    run Failover(3);
#endif
#if NL > 4
    run Failover(4)
#endif
  }
}
