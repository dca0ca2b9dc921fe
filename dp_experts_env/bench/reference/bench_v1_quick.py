"""The bench-v1 quick reference set (written by ``dp-experts bench --all``)."""

DATA = r"""
{
 "schema": "dp-experts-bench-reference/2",
 "card_schema": "dp-experts-bench/2",
 "key": {
  "protocol": "bench-v1",
  "digest": "16b1ec4a703f1e108032ec9ad970df84ceca949c6c806166b7f3462a69ff887f",
  "quick": true,
  "scoring": "6aa1d84de9ce575d"
 },
 "scales": {
  "shift": [
   534.75,
   81.25
  ],
  "switching": [
   1799.75,
   88.5
  ],
  "anti-lazy": [
   784.25,
   -902.5
  ],
  "ftl-trap": [
   795.75,
   33.75
  ],
  "stochastic": [
   177.25,
   9.75
  ],
  "punish-frequent": [
   118.0,
   35.75
  ],
  "bandit": [
   145.0,
   81.75
  ],
  "bandit-advice": [
   597.5,
   142.5
  ],
  "digits": [
   75.75,
   -14.25
  ],
  "oco-stochastic": [
   1244.493062871126,
   38.75533118639612
  ],
  "oco-anti-ftl": [
   0.5,
   0.6581138830084189
  ]
 },
 "entries": [
  {
   "label": "uniform",
   "name": "uniform",
   "params": {},
   "feedback": "any",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 1.734723475976807e-18,
    "static-worst-case": -2.168404344971009e-19,
    "stationary": 0.0,
    "adaptive": 2.7755575615628914e-17,
    "bandit": -2.7755575615628914e-17,
    "bandit-advice": -1.734723475976807e-18,
    "continuous": null,
    "real-data": 0.0
   },
   "overall": -4.336808689942018e-20,
   "fingerprint": "cd33ba8c33e5fc33"
  },
  {
   "label": "exp3",
   "name": "exp3",
   "params": {},
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.849802371541502,
    "bandit-advice": 0.013736263736263738,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.4317693176388828,
   "fingerprint": "1402a63cb351613f"
  },
  {
   "label": "exp4",
   "name": "exp4",
   "params": {},
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.6679841897233202,
    "bandit-advice": 1.0,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.8339920948616601,
   "fingerprint": "77157cc0dc278d19"
  },
  {
   "label": "ftpl-gr",
   "name": "ftpl-gr",
   "params": {},
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.3517786561264822,
    "bandit-advice": 0.014835164835164831,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.1833069104808235,
   "fingerprint": "61cd4b587c0e3223"
  },
  {
   "label": "kl-ucb",
   "name": "kl-ucb",
   "params": {},
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 1.158102766798419,
    "bandit-advice": 0.04835164835164835,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.6032272075750337,
   "fingerprint": "18d09f52bfdfa05b"
  },
  {
   "label": "thompson",
   "name": "thompson",
   "params": {},
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 1.6482213438735178,
    "bandit-advice": 0.014835164835164836,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.8315282543543413,
   "fingerprint": "d1296b6fc964eeb4"
  },
  {
   "label": "tsallis-inf",
   "name": "tsallis-inf",
   "params": {},
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 1.0,
    "bandit-advice": 0.01043956043956044,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.5052197802197802,
   "fingerprint": "37f8bec14a5ba91d"
  },
  {
   "label": "ucb1",
   "name": "ucb1",
   "params": {},
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.632411067193676,
    "bandit-advice": 0.015384615384615385,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.32389784128914567,
   "fingerprint": "d86661aded6bc7b2"
  },
  {
   "label": "fixed-share",
   "name": "fixed-share",
   "params": {},
   "feedback": "full",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 1.0,
    "static-worst-case": 0.9880249343832022,
    "stationary": 0.8761194029850746,
    "adaptive": 1.0,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 1.0
   },
   "overall": 0.9960083114610674,
   "fingerprint": "122345811e5bfeba"
  },
  {
   "label": "follow-the-leader",
   "name": "follow-the-leader",
   "params": {},
   "feedback": "full",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 0.3098573468429543,
    "static-worst-case": 0.09621234401057804,
    "stationary": 1.0,
    "adaptive": 0.48936170212765956,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.7388888888888889
   },
   "overall": 0.5127026459531676,
   "fingerprint": "8d34ae2bbfc59f8b"
  },
  {
   "label": "hedge",
   "name": "hedge",
   "params": {},
   "feedback": "full",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 0.28808625067750787,
    "static-worst-case": 0.7241737068326664,
    "stationary": 0.8880597014925373,
    "adaptive": 0.9726443768996962,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.625
   },
   "overall": 0.7457444694417346,
   "fingerprint": "c29158cf3590021b"
  },
  {
   "label": "shrinking-dartboard",
   "name": "shrinking-dartboard",
   "params": {},
   "feedback": "full",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 0.28392262759496584,
    "static-worst-case": 0.7066600174589115,
    "stationary": 0.908955223880597,
    "adaptive": -0.243161094224924,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.6944444444444444
   },
   "overall": 0.5616756964994406,
   "fingerprint": "0eb0e12e6b12ac8d"
  },
  {
   "label": "ftrl-oco",
   "name": "ftrl-oco",
   "params": {},
   "feedback": "oco",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.9999999999999998,
    "real-data": null
   },
   "overall": 0.9999999999999998,
   "fingerprint": "fc0fde0a8d018c73"
  },
  {
   "label": "lazy-ftrl-oco",
   "name": "lazy-ftrl-oco",
   "params": {},
   "feedback": "oco",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.8949204329790579,
    "real-data": null
   },
   "overall": 0.8949204329790579,
   "fingerprint": "9e2a5e7236f275a8"
  },
  {
   "label": "ogd",
   "name": "ogd",
   "params": {},
   "feedback": "oco",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.9831710648404943,
    "real-data": null
   },
   "overall": 0.9831710648404943,
   "fingerprint": "0e8e130fde5189de"
  },
  {
   "label": "p-comw-lazy",
   "name": "p-comw-lazy",
   "params": {},
   "feedback": "oco",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.41884215048324785,
    "real-data": null
   },
   "overall": 0.41884215048324785,
   "fingerprint": "63d2b9b5e86047f5"
  },
  {
   "label": "adap-ucb",
   "name": "adap-ucb",
   "params": {},
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.019762845849802396,
    "bandit-advice": 0.009890109890109891,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.014826477869956143,
   "fingerprint": "5d8b1200251d007a"
  },
  {
   "label": "dp-klucb",
   "name": "dp-klucb",
   "params": {},
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.2648221343873518,
    "bandit-advice": 0.026373626373626374,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.1455978803804891,
   "fingerprint": "ceab1b35f76ecf25"
  },
  {
   "label": "dp-klucb:paper",
   "name": "dp-klucb:paper",
   "params": {},
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": -0.12252964426877472,
    "bandit-advice": -0.009890109890109893,
    "continuous": null,
    "real-data": null
   },
   "overall": -0.0662098770794423,
   "fingerprint": "f813a9472b781503"
  },
  {
   "label": "ldp-exp4",
   "name": "ldp-exp4",
   "params": {},
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.37944664031620556,
    "bandit-advice": 0.27912087912087913,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.32928375971854235,
   "fingerprint": "5fae04fb32db625b"
  },
  {
   "label": "private-bandit-over-experts",
   "name": "private-bandit-over-experts",
   "params": {},
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.466403162055336,
    "bandit-advice": 0.29395604395604397,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.38017960300569,
   "fingerprint": "6b1a00001a29f8e7"
  },
  {
   "label": "private-batched-bandit",
   "name": "private-batched-bandit",
   "params": {},
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.39920948616600793,
    "bandit-advice": 0.016483516483516484,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.2078465013247622,
   "fingerprint": "88088d2e19bec597"
  },
  {
   "label": "private-batched-exp4",
   "name": "private-batched-exp4",
   "params": {},
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": -0.09881422924901183,
    "bandit-advice": 0.4527472527472527,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.17696651174912043,
   "fingerprint": "406e423abd16995e"
  },
  {
   "label": "private-batched-exp4:paper",
   "name": "private-batched-exp4:paper",
   "params": {},
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.11857707509881424,
    "bandit-advice": 0.15274725274725276,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.13566216392303349,
   "fingerprint": "1a073c6112b3e4fb"
  },
  {
   "label": "batched-private-shrinking-dartboard",
   "name": "batched-private-shrinking-dartboard",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.1287942655250978,
    "static-worst-case": 0.5887712269903568,
    "stationary": 0.04776119402985074,
    "adaptive": -4.753799392097264,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.45
   },
   "overall": 0.2088518198516495,
   "fingerprint": "7658e6b86d38b5a9"
  },
  {
   "label": "dp-ftrl-tree",
   "name": "dp-ftrl-tree",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.032760575766922796,
    "static-worst-case": 0.4101263218181542,
    "stationary": 0.08358208955223881,
    "adaptive": -2.1094224924012157,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.4527777777777778
   },
   "overall": 0.17548966237910527,
   "fingerprint": "e23d00aa6a56619b"
  },
  {
   "label": "gaussian-tree-hedge",
   "name": "gaussian-tree-hedge",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.14840716189236705,
    "static-worst-case": 0.622158112850389,
    "stationary": 0.32089552238805974,
    "adaptive": -1.4802431610942248,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.3194444444444444
   },
   "overall": 0.2629157095749571,
   "fingerprint": "93077bd034c0376c"
  },
  {
   "label": "limited-updates",
   "name": "limited-updates",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.13309081303360035,
    "static-worst-case": 0.4580683059487507,
    "stationary": 0.9492537313432836,
    "adaptive": -9.03951367781155,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.5083333333333333
   },
   "overall": 0.36649748410522814,
   "fingerprint": "bfc8438b5cd89404"
  },
  {
   "label": "meta-expert-reduction",
   "name": "meta-expert-reduction",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.07846624299438745,
    "static-worst-case": 0.1263988427635963,
    "stationary": 0.061194029850746276,
    "adaptive": -2.738601823708207,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.21111111111111114
   },
   "overall": 0.08868637186957667,
   "fingerprint": "a0e83bc2304be236"
  },
  {
   "label": "noisy-clipped-hedge",
   "name": "noisy-clipped-hedge",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.1286025096582622,
    "static-worst-case": 0.17619795149550282,
    "stationary": -0.04029850746268656,
    "adaptive": -5.045592705167174,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.24166666666666667
   },
   "overall": 0.08816731789702614,
   "fingerprint": "e2d3f25a9c60d3f1"
  },
  {
   "label": "private-fixed-share",
   "name": "private-fixed-share",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.39173706171381906,
    "static-worst-case": 0.7233761082499193,
    "stationary": 0.2,
    "adaptive": -0.6261398176291794,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.5555555555555556
   },
   "overall": 0.3824308724231249,
   "fingerprint": "37537765a9130e58"
  },
  {
   "label": "private-lazy-hedge",
   "name": "private-lazy-hedge",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.017871751485685157,
    "static-worst-case": 0.30209657193806755,
    "stationary": 0.18507462686567164,
    "adaptive": -5.167173252279635,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": -0.03888888888888886
   },
   "overall": 0.054685829820822644,
   "fingerprint": "b832f4575ffa0bc9"
  },
  {
   "label": "private-shrinking-dartboard",
   "name": "private-shrinking-dartboard",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.08292941918347921,
    "static-worst-case": 0.43594791035735914,
    "stationary": -0.010447761194029855,
    "adaptive": -6.009118541033434,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.14444444444444443
   },
   "overall": 0.07230870081129794,
   "fingerprint": "99a78a97abdd7dc2"
  },
  {
   "label": "randomized-prefix-softmax",
   "name": "randomized-prefix-softmax",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.10749732419627231,
    "static-worst-case": 0.43563485200188123,
    "stationary": 0.7328358208955223,
    "adaptive": -9.376899696048632,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.5944444444444444
   },
   "overall": 0.37919220688086597,
   "fingerprint": "1f44b1dded09b48d"
  },
  {
   "label": "svt-restart",
   "name": "svt-restart",
   "params": {},
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.3511234751542866,
    "static-worst-case": 0.7371006755408354,
    "stationary": 0.8104477611940298,
    "adaptive": -6.914893617021277,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.4833333333333334
   },
   "overall": 0.5238524946761518,
   "fingerprint": "96e0ae671c19af15"
  },
  {
   "label": "dp-ftrl-oco",
   "name": "dp-ftrl-oco",
   "params": {},
   "feedback": "oco",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.5355879410075237,
    "real-data": null
   },
   "overall": 0.5355879410075237,
   "fingerprint": "260b2b2079f19394"
  },
  {
   "label": "gaussian-dp-ftrl-oco",
   "name": "gaussian-dp-ftrl-oco",
   "params": {},
   "feedback": "oco",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.8094829180221823,
    "real-data": null
   },
   "overall": 0.8094829180221823,
   "fingerprint": "0a355737d3420072"
  },
  {
   "label": "p-comw",
   "name": "p-comw",
   "params": {},
   "feedback": "oco",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.24677171137136938,
    "real-data": null
   },
   "overall": 0.24677171137136938,
   "fingerprint": "080658db128ddb4c"
  }
 ]
}
"""
