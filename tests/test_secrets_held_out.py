"""Masking measured on credentials nobody tuned it on: the held-out corpus, Kingfisher's rule examples that are not
Nosey Parker's (tests/data/secrets_corpus_kingfisher.py). No pattern or rule of kb's was written or changed after it
was first measured; the credentials it leaks are listed here as measured, each a strict expected failure, so that the
figure docs/reliability.md states is the one these tests find, and a credential masked since shows as a pass (and
the corpus, having been looked at, then stops being held out)."""

from __future__ import annotations

import pytest
from data import secrets_corpus, secrets_corpus_independent, secrets_corpus_kingfisher, secrets_corpus_noseyparker

from kb.secrets.redact import redact_text

# What the held-out measurement leaks (287 of 976): kept as found, so that the figure stays honest.
HELD_OUT_LEAKS = frozenset({
    "kingfisher.airtable.2#0", "kingfisher.apifonica.1#0", "kingfisher.apifonica.1#1", "kingfisher.apitemplate.1#1",
    "kingfisher.apollo.1#0", "kingfisher.apollo.1#1", "kingfisher.appsynergy.1#0", "kingfisher.asana.2#0",
    "kingfisher.autopilot.1#1", "kingfisher.besnappy.1#0", "kingfisher.betterstack.1#1", "kingfisher.bitbar.1#1",
    "kingfisher.blazemeter.1#0", "kingfisher.blazemeter.1#1", "kingfisher.box.1#1", "kingfisher.box.1#2",
    "kingfisher.browshot.1#0", "kingfisher.browshot.1#1", "kingfisher.browshot.1#2", "kingfisher.buddyns.1#1",
    "kingfisher.bugherd.1#0", "kingfisher.bugherd.1#1", "kingfisher.bugsnag.1#0", "kingfisher.bugsnag.1#1",
    "kingfisher.buttercms.1#1", "kingfisher.calendarific.1#1", "kingfisher.campayn.1#0", "kingfisher.campayn.1#1",
    "kingfisher.carboninterface.1#0", "kingfisher.centralstationcrm.1#3", "kingfisher.chartmogul.1#0",
    "kingfisher.chatfuel.1#0", "kingfisher.chatfuel.1#1", "kingfisher.clarifai.1#1", "kingfisher.cliengo.1#0",
    "kingfisher.clockify.1#1", "kingfisher.clockify.1#2", "kingfisher.cloudsmith.1#0", "kingfisher.cloudsmith.1#1",
    "kingfisher.coda.1#0", "kingfisher.coda.1#1", "kingfisher.codacy.1#1", "kingfisher.coinapi.1#0",
    "kingfisher.coinapi.1#1", "kingfisher.coinapi.1#2", "kingfisher.collect2.1#0", "kingfisher.collect2.1#1",
    "kingfisher.collect2.1#2", "kingfisher.convertapi.1#1", "kingfisher.cryptocompare.1#1",
    "kingfisher.currencyfreaks.1#0", "kingfisher.currencyscoop.1#1", "kingfisher.currencyscoop.1#2",
    "kingfisher.d7network.1#0", "kingfisher.d7network.1#1", "kingfisher.d7network.1#2", "kingfisher.dailyco.1#1",
    "kingfisher.dailyco.1#2", "kingfisher.dailyco.1#3", "kingfisher.dandelion.1#0", "kingfisher.dandelion.1#1",
    "kingfisher.dareboost.1#0", "kingfisher.databox.1#1", "kingfisher.databox.1#2", "kingfisher.deepgram.1#1",
    "kingfisher.deepgram.1#2", "kingfisher.detectlanguage.1#0", "kingfisher.detectlanguage.1#1",
    "kingfisher.diggernaut.1#1", "kingfisher.docparser.1#1", "kingfisher.dronahq.1#1",
    "kingfisher.eagleeyenetworks.1#0", "kingfisher.eagleeyenetworks.1#1", "kingfisher.eagleeyenetworks.1#2",
    "kingfisher.enigma.1#0", "kingfisher.ethplorer.1#0", "kingfisher.eventbrite.1#0", "kingfisher.eventbrite.1#1",
    "kingfisher.eventbrite.1#2", "kingfisher.eventbrite.1#3", "kingfisher.extractorapi.1#0",
    "kingfisher.fastforex.1#0", "kingfisher.feedier.1#0", "kingfisher.feedier.1#1", "kingfisher.findl.1#0",
    "kingfisher.findl.1#1", "kingfisher.finnhub.1#0", "kingfisher.fixerio.1#1", "kingfisher.flickr.1#1",
    "kingfisher.flightapi.1#0", "kingfisher.flightapi.1#1", "kingfisher.flightapi.1#2", "kingfisher.front.1#0",
    "kingfisher.front.1#1", "kingfisher.fullstory.1.2#0", "kingfisher.fullstory.1.2#1", "kingfisher.gcp.1#0",
    "kingfisher.gcp.1#1", "kingfisher.weak_password.1#0", "kingfisher.geocodify.1#2", "kingfisher.glassnode.1#0",
    "kingfisher.glassnode.1#1", "kingfisher.goodday.1#1", "kingfisher.graphhopper.1#0",
    "kingfisher.graphhopper.1#1", "kingfisher.graphhopper.1#2", "kingfisher.happyscribe.1#0",
    "kingfisher.happyscribe.1#1", "kingfisher.helpscout.1#1", "kingfisher.holidayapi.1#0",
    "kingfisher.holistic.1#0", "kingfisher.holistic.1#2", "kingfisher.hybiscus.1#1", "kingfisher.iconfinder.1#1",
    "kingfisher.imagekit.1#0", "kingfisher.imagga.1#0", "kingfisher.imagga.1#1", "kingfisher.infura.1#1",
    "kingfisher.instabot.1#1", "kingfisher.ipinfo.1#1", "kingfisher.ipinfodb.1#1", "kingfisher.ipinfodb.1#2",
    "kingfisher.jupiterone.1#0", "kingfisher.jupiterone.1#1", "kingfisher.jupiterone.1#2",
    "kingfisher.karmacrm.1#0", "kingfisher.karmacrm.1#1", "kingfisher.languagelayer.1#1",
    "kingfisher.languagelayer.1#2", "kingfisher.languagelayer.1#3", "kingfisher.languagelayer.1#4",
    "kingfisher.lemlist.1#1", "kingfisher.lemlist.1#2", "kingfisher.notify.line.1#1", "kingfisher.notify.line.1#2",
    "kingfisher.linkpreview.1#1", "kingfisher.loadmill.1#1", "kingfisher.logzio.1#2", "kingfisher.lokalise.1#1",
    "kingfisher.loyverse.1#2", "kingfisher.mailboxlayer.1#1", "kingfisher.mailerlite.1#0",
    "kingfisher.mailjetsms.1#0", "kingfisher.mailjetsms.1#1", "kingfisher.mediastack.1#1", "kingfisher.miro.1#0",
    "kingfisher.miro.1#1", "kingfisher.mongodb.3#2", "kingfisher.monkeylearn.1#0", "kingfisher.monkeylearn.1#1",
    "kingfisher.monkeylearn.1#2", "kingfisher.moonclerk.1#1", "kingfisher.moosend.1#1", "kingfisher.newsapi.1#0",
    "kingfisher.nftport.1#1", "kingfisher.nicereply.1#0", "kingfisher.nightfall.1#0", "kingfisher.nightfall.1#1",
    "kingfisher.nightfall.1#2", "kingfisher.nimble.1#0", "kingfisher.nimble.1#1", "kingfisher.nimble.1#2",
    "kingfisher.nimble.1#3", "kingfisher.nimble.1#4", "kingfisher.noticeable.1#0", "kingfisher.numverify.1#1",
    "kingfisher.oanda.1#0", "kingfisher.oanda.1#1", "kingfisher.opencagedata.1#0", "kingfisher.opencagedata.1#2",
    "kingfisher.openweather.1#0", "kingfisher.openweather.1#1", "kingfisher.owlbot.1#1",
    "kingfisher.packagecloud.1#0", "kingfisher.packagecloud.1#3", "kingfisher.pandadoc.1#0",
    "kingfisher.pandadoc.1#2", "kingfisher.pandadoc.1#3", "kingfisher.parseur.1#0", "kingfisher.paydirtapp.1#1",
    "kingfisher.pdfshift.1#1", "kingfisher.pdfshift.1#2", "kingfisher.pepipost.1#0", "kingfisher.pepipost.1#1",
    "kingfisher.podio.1#0", "kingfisher.pollsapi.1#0", "kingfisher.posthog.1#0", "kingfisher.protocolsio.1#1",
    "kingfisher.protocolsio.1#2", "kingfisher.proxycrawl.1#0", "kingfisher.pubnub.1#0", "kingfisher.pubnub.2#0",
    "kingfisher.pushbullet.1#1", "kingfisher.qubole.1#1", "kingfisher.rawg.1#1", "kingfisher.rawg.1#2",
    "kingfisher.reallysimplesystems.1#0", "kingfisher.rebrandly.1#0", "kingfisher.refiner.1#0",
    "kingfisher.refiner.1#1", "kingfisher.rentman.1#0", "kingfisher.salesblink.1#0", "kingfisher.salesblink.1#1",
    "kingfisher.salescookie.1#1", "kingfisher.scaleway.1#0", "kingfisher.scaleway.1#1", "kingfisher.scaleway.1#2",
    "kingfisher.scrapeowl.1#0", "kingfisher.scrapeowl.1#1", "kingfisher.scrapestack.1#1", "kingfisher.scrapfly.1#2",
    "kingfisher.scrapingant.1#2", "kingfisher.screenshotlayer.1#1", "kingfisher.screenshotlayer.1#2",
    "kingfisher.screenshotlayer.1#3", "kingfisher.securitytrails.1#0", "kingfisher.securitytrails.1#1",
    "kingfisher.selectpdf.1#0", "kingfisher.sendbird.1#0", "kingfisher.sendbird.1#1", "kingfisher.serphouse.1#1",
    "kingfisher.sherpadesk.1#1", "kingfisher.shipday.1#1", "kingfisher.shortcut.1#0", "kingfisher.shortcut.1#1",
    "kingfisher.shortcut.1#2", "kingfisher.signaturit.1#0", "kingfisher.signupgenius.1#1",
    "kingfisher.signupgenius.1#2", "kingfisher.simvoly.1#1", "kingfisher.skrappio.1#0",
    "kingfisher.smartsheets.1#0", "kingfisher.speechtextai.1#1", "kingfisher.splunk.1#0", "kingfisher.splunk.1#1",
    "kingfisher.spoonacular.1#1", "kingfisher.squarespace.1#0", "kingfisher.supernotes.1#1",
    "kingfisher.surveybot.1#0", "kingfisher.tefter.1#0", "kingfisher.tefter.1#1", "kingfisher.telnyx.1#0",
    "kingfisher.theoddsapi.1#0", "kingfisher.theoddsapi.1#1", "kingfisher.tickettailor.1#0",
    "kingfisher.tickettailor.1#1", "kingfisher.timezoneapi.1#0", "kingfisher.tineswebhook.1#0",
    "kingfisher.tmetric.1#0", "kingfisher.tmetric.1#1", "kingfisher.toggltrack.1#2", "kingfisher.tyntec.1#1",
    "kingfisher.tyntec.1#2", "kingfisher.upcdatabase.1#1", "kingfisher.urlscan.1#1", "kingfisher.urlscan.1#2",
    "kingfisher.vatlayer.1#0", "kingfisher.vbout.1#0", "kingfisher.vbout.1#1", "kingfisher.vbout.1#2",
    "kingfisher.vercel.1#0", "kingfisher.vercel.1#1", "kingfisher.versioneye.1#1", "kingfisher.versioneye.1#2",
    "kingfisher.visualcrossing.1#0", "kingfisher.visualcrossing.1#1", "kingfisher.voiceflow.1#0",
    "kingfisher.voiceflow.1#1", "kingfisher.walkscore.1#0", "kingfisher.walkscore.1#2", "kingfisher.weatherbit.1#1",
    "kingfisher.webscraper.1#1", "kingfisher.webscraping.1#1", "kingfisher.wandb.1#0", "kingfisher.wandb.1#1",
    "kingfisher.youneedabudget.1#1", "kingfisher.zenrows.1#1", "kingfisher.zenrows.1#2",
    "kingfisher.zerobounce.1#2", "kingfisher.zipcodeapi.1#1", "kingfisher.zipcodebase.1#0",
    "kingfisher.zipcodebase.1#1", "kingfisher.zohocrm.1#0", "kingfisher.zohocrm.1#1",
    "kingfisher.zonkafeedback.1#1", "kingfisher.zonkafeedback.1#2", "kingfisher.zonkafeedback.1#3"
})  # fmt: skip


def test_the_held_out_corpus_is_apart_from_every_corpus_kb_was_tuned_on() -> None:
    held_out = secrets_corpus_kingfisher.SECRETS
    assert len(held_out) >= 900 and len({s.id for s in held_out}) == len(held_out)
    assert secrets_corpus_kingfisher.SOURCE.startswith("mongodb/kingfisher@")
    assert secrets_corpus_kingfisher.LEFT_OUT_AS == secrets_corpus_noseyparker.SOURCE
    tuned = secrets_corpus.SECRETS + secrets_corpus_independent.SECRETS + secrets_corpus_noseyparker.SECRETS
    assert not {s.value for s in held_out} & {s.value for s in tuned}
    assert not {s.text for s in held_out} & {s.text for s in tuned}
    assert all(s.probe in s.text for s in held_out)
    assert {s.id for s in held_out} >= HELD_OUT_LEAKS


@pytest.mark.parametrize(
    "secret",
    [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason="leaked by the held-out measurement"))
        if s.id in HELD_OUT_LEAKS
        else s
        for s in secrets_corpus_kingfisher.SECRETS
    ],
    ids=[s.id for s in secrets_corpus_kingfisher.SECRETS],
)
def test_a_held_out_credential_is_masked(secret) -> None:
    assert secret.probe not in redact_text(secret.text)
